// Asks before a provider, a contract or a budget is removed, saying what removing it does: for a
// provider or a contract, how many open jobs name it and what happens to them.
import { useEffect, useState } from "react";

import { call } from "../api";
import type { OpenJobs } from "../bindings";
import type { Shown } from "../errors";
import { ErrorBanner } from "./ErrorBanner";
import type { Result } from "../api";

interface Props {
  what: "provider" | "contract" | "budget";
  name: string;
  /** How many open jobs name it; left out where no job names it (a budget). */
  inUse?: () => Promise<Result<OpenJobs, unknown>>;
  /** What removing it does, said where no job is counted. */
  effect?: string;
  remove: () => Promise<Result<null, unknown>>;
  onDone: (removed: boolean) => void;
}

/** What happens to the open jobs that name what is removed, in words. */
export function consequences(what: Props["what"], open: OpenJobs): string {
  const total = open.queued + open.running + open.unknown;
  if (total === 0) return `No open job names this ${what}. Finished jobs keep its name in their history.`;
  const waiting = open.queued + open.running;
  const parts: string[] = [];
  if (waiting > 0) {
    parts.push(
      `${waiting} queued or running ${waiting === 1 ? "job fails" : "jobs fail"} as misconfigured at ${waiting === 1 ? "its" : "their"} next claim`,
    );
  }
  if (open.unknown > 0) {
    parts.push(`${open.unknown} unknown ${open.unknown === 1 ? "job keeps" : "jobs keep"} waiting for a person`);
  }
  return `${parts.join("; ")}. History keeps the ${what}'s name.`;
}

export function RemoveConfirm({ what, name, inUse, effect, remove, onDone }: Props) {
  const [open, setOpen] = useState<OpenJobs | null>(null);
  const [error, setError] = useState<Shown | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (inUse === undefined) return;
    let current = true;
    void call(inUse).then((r) => {
      if (!current) return;
      if (r.status === "ok") setOpen(r.data);
      else setError(r.error);
    });
    return () => {
      current = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [name]);

  const confirm = () => {
    setBusy(true);
    void call(remove).then((r) => {
      setBusy(false);
      if (r.status === "error") setError(r.error);
      else onDone(true);
    });
  };

  return (
    <div className="confirm" role="alertdialog" aria-label={`Remove ${what} ${name}`} data-testid={`remove-${what}-confirm`}>
      <p>
        Remove the {what} <code>{name}</code>?
      </p>
      {effect !== undefined && <p data-testid={`remove-${what}-effect`}>{effect}</p>}
      {inUse !== undefined && open === null && error === null && <p className="muted">Counting the open jobs that name it…</p>}
      {open !== null && (
        <p data-testid={`remove-${what}-counts`}>
          Open jobs naming it: {open.queued} queued, {open.running} running, {open.unknown} unknown.{" "}
          {consequences(what, open)}
        </p>
      )}
      {error !== null && <ErrorBanner error={error} />}
      <div className="actions">
        <button type="button" className="button danger" disabled={busy || (inUse !== undefined && open === null)} onClick={confirm} data-testid={`remove-${what}-yes`}>
          Remove {name}
        </button>
        <button type="button" className="button" onClick={() => onDone(false)} data-testid={`remove-${what}-no`}>
          Keep it
        </button>
      </div>
    </div>
  );
}
