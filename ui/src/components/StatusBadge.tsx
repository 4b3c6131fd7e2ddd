// A job's status in words, coloured the same way on every screen.
import type { JobStatus } from "../bindings";
import { MEANING } from "../statuses";

/** The status word with its state colour; the meaning is on hover. */
export function StatusBadge({ status }: { status: JobStatus }) {
  return (
    <span className={`status status-${status}`} title={MEANING[status]}>
      <span className="status-dot" aria-hidden="true" />
      {status}
    </span>
  );
}
