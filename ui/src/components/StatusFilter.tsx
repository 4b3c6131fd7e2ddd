// Chooses which jobs the list shows: all, or those of one status.
import type { JobStatus } from "../bindings";
import { MEANING, STATUSES } from "../statuses";

interface Props {
  value: JobStatus | null;
  onChange: (status: JobStatus | null) => void;
}

/** A row of toggle buttons, one pressed at a time; each is reachable with Tab. */
export function StatusFilter({ value, onChange }: Props) {
  const options: { status: JobStatus | null; label: string; title: string }[] = [
    { status: null, label: "all", title: "Jobs of every status" },
    ...STATUSES.map((s) => ({ status: s, label: s, title: MEANING[s] })),
  ];
  return (
    <div className="filter" role="group" aria-label="Filter by status">
      {options.map(({ status, label, title }) => (
        <button
          key={label}
          type="button"
          className="filter-option"
          aria-pressed={value === status}
          title={title}
          onClick={() => onChange(status)}
          data-status={label}
        >
          {status !== null && <span className={`status-dot status-${status}`} aria-hidden="true" />}
          {label}
        </button>
      ))}
    </div>
  );
}
