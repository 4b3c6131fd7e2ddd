// One of a job's values as the Job screen shows it (SPEC §13): whole, as it always was or, when
// large, its size and first part with "show all" and "save to a file", each read only when asked.
import { useState, type ReactNode } from "react";

import { call } from "../api";
import { commands, type JobPart, type ShownValue, type Value } from "../bindings";
import type { Shown } from "../errors";
import { byteSize } from "../format";
import { ErrorBanner } from "./ErrorBanner";

interface Props {
  shown: ShownValue;
  jobId: string;
  part: JobPart;
  /** How the value is rendered whole: a small one at once, a large one after "show all". */
  whole: (value: Value) => ReactNode;
}

export function ValueView({ shown, jobId, part, whole }: Props) {
  if (shown.shown === "whole") return <>{whole(shown.value)}</>;
  return <LargeValue size={shown.size} firstPart={shown.first_part} jobId={jobId} part={part} whole={whole} />;
}

function LargeValue({ size, firstPart, jobId, part, whole }: Omit<Props, "shown"> & { size: number; firstPart: string }) {
  // Wrapped, since the whole value may itself be null.
  const [all, setAll] = useState<{ value: Value } | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [error, setError] = useState<Shown | null>(null);
  const [busy, setBusy] = useState(false);

  const showAll = async () => {
    setBusy(true);
    const read = await call(() => commands.jobPart(jobId, part));
    setBusy(false);
    setError(read.status === "error" ? read.error : null);
    if (read.status === "ok") setAll({ value: read.data });
  };
  const save = async () => {
    setBusy(true);
    const written = await call(() => commands.saveJobPart(jobId, part));
    setBusy(false);
    setError(written.status === "error" ? written.error : null);
    if (written.status === "ok") setSaved(written.data.path);
  };

  return (
    <div className="large-value" data-testid={`large-${partName(part)}`}>
      <p className="muted">
        <span data-testid="large-size">{byteSize(size)}</span>
        {all === null ? ": large, so only its first part is shown." : ", shown whole."}
      </p>
      {all === null ? (
        <pre className="json" data-testid="first-part">
          {firstPart}
          {"\n…"}
        </pre>
      ) : (
        whole(all.value)
      )}
      <div className="actions">
        {all === null && (
          <button type="button" className="button" disabled={busy} onClick={() => void showAll()} data-testid="show-all">
            Show all
          </button>
        )}
        <button type="button" className="button" disabled={busy} onClick={() => void save()} data-testid="save-to-file">
          Save to a file
        </button>
      </div>
      {saved !== null && (
        <p className="muted" data-testid="saved-to">
          Saved to <code>{saved}</code>
        </p>
      )}
      {error !== null && <ErrorBanner error={error} />}
    </div>
  );
}

/** `intent`, `result`, `event-3`: the part's name, for test ids. */
function partName(part: JobPart): string {
  return part.part === "event_detail" ? `event-${part.index}` : part.part;
}
