// The Submit screen: one draft, one idempotency key, however often Submit is clicked.
import { useRef, useState } from "react";

import { call, useLedger, useRead } from "../api";
import { commands, type Submitted } from "../bindings";
import { CopyId } from "../components/CopyId";
import { StatusBadge } from "../components/StatusBadge";
import { clicked, edited, startDraft, type Draft } from "../draft";
import { existingJob, type Shown } from "../errors";

/** What a new draft starts with: a job for the built-in sandbox. */
export const TEMPLATE = `{
  "route": ["sandbox"],
  "input": {"prompt": "Say hello"}
}`;

/** What one click on Submit came to. */
type Outcome =
  | { click: number; kind: "submitted" | "replayed"; submitted: Submitted }
  | { click: number; kind: "error"; error: Shown };

export function SubmitScreen({ open }: { open: (jobId: string) => void }) {
  const [draft, setDraft] = useState<Draft>(() => startDraft(TEMPLATE));
  const [outcomes, setOutcomes] = useState<Outcome[]>([]);
  // The click counter lives outside state so two clicks in one frame get distinct numbers.
  const clicks = useRef(0);
  // Read at click time, so a click uses the draft as it is now, not as it was rendered.
  const current = useRef(draft);
  current.current = draft;
  const { changed } = useLedger();
  const providers = useRead(() => commands.providers(), []);

  const onEdit = (intent: string) => {
    const next = edited(current.current, intent);
    if (next.key !== current.current.key) setOutcomes([]);
    current.current = next;
    setDraft(next);
  };

  const onSubmit = () => {
    const click = ++clicks.current;
    const d = clicked(current.current);
    current.current = d;
    setDraft(d);
    void call(() => commands.submit(d.key, d.intent)).then((result) => {
      const outcome: Outcome =
        result.status === "ok"
          ? { click, kind: result.data.replayed ? "replayed" : "submitted", submitted: result.data }
          : { click, kind: "error", error: result.error };
      // An answer for a draft that has since been edited away belongs to no outcome shown now.
      if (current.current.key === d.key) {
        setOutcomes((all) => [...all, outcome].sort((a, b) => a.click - b.click));
      }
      changed();
    });
  };

  const names = providers.data?.map((p) => p.name) ?? [];
  return (
    <section className="screen submit" aria-labelledby="submit-title">
      <h2 id="submit-title">Submit a job</h2>
      <p className="muted">
        This draft has one idempotency key. Clicking Submit again sends the same key: you get
        the same job, never a second one. Editing the intent after a submit starts a new draft
        with a new key.
      </p>
      <div className="field">
        <span className="label">Idempotency key</span>
        <CopyId value={draft.key} full testId="draft-key" />
      </div>
      <label className="field">
        <span className="label">Intent (JSON: route, input, optional contract, params, max_attempts)</span>
        <textarea
          className="intent"
          spellCheck={false}
          rows={8}
          value={draft.intent}
          onChange={(e) => onEdit(e.currentTarget.value)}
          data-testid="intent"
        />
      </label>
      {names.length > 0 && (
        <p className="muted">Providers you can route to: {names.map((n) => <code key={n} className="chip">{n}</code>)}</p>
      )}
      <div className="actions">
        <button type="button" className="button primary" onClick={onSubmit} data-testid="submit">
          Submit
        </button>
      </div>
      <ol className="outcomes" aria-live="polite" data-testid="outcomes">
        {outcomes.map((o) => (
          <li key={o.click} className={`outcome outcome-${o.kind}`} data-kind={o.kind}>
            <OutcomeLine outcome={o} open={open} />
          </li>
        ))}
      </ol>
    </section>
  );
}

function OutcomeLine({ outcome, open }: { outcome: Outcome; open: (jobId: string) => void }) {
  if (outcome.kind === "error") {
    return <span>{explain(outcome.error)}</span>;
  }
  const { job } = outcome.submitted;
  return (
    <span>
      {outcome.kind === "submitted" ? "Submitted: new job " : "Already submitted: the same job "}
      <button type="button" className="link" onClick={() => open(job.id)} data-job-id={job.id}>
        <code>{job.id}</code>
      </button>{" "}
      <StatusBadge status={job.status} />
      {outcome.kind === "replayed" && (
        <span className="muted"> — this key was used before with this intent, so nothing new was started.</span>
      )}
    </span>
  );
}

/** A submit's error in words a person can act on. */
export function explain(error: Shown): string {
  switch (error.code) {
    case "idempotency_conflict": {
      const job = existingJob(error);
      const which = job === null ? "another job" : `job ${job}`;
      return `This key already belongs to ${which}, submitted with a different intent (${error.message}). Edit the intent to start a new draft with a new key.`;
    }
    case "invalid_input":
      return `The intent is not valid: ${error.message}`;
    default:
      return `${error.code}: ${error.message}`;
  }
}
