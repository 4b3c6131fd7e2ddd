// "Select all N matching" on the Jobs list (SPEC §16): a person's action on every job the
// list's filter matches, after one confirmation that names the count, the provider and what the
// action risks (the single-job actions' own words), with progress while it runs and the result,
// the skipped jobs listed with why.
import { useEffect, useRef, useState } from "react";

import { CANCEL_RISK, RESOLVE_WORDS, RETRY_RISK } from "../actions";
import { call, useLedger } from "../api";
import { commands, events, type BulkOperation, type BulkRequest, type JobStatus, type Verdict } from "../bindings";
import type { Shown } from "../errors";
import { shortId } from "../format";
import { ErrorBanner } from "./ErrorBanner";

interface Props {
  status: JobStatus | null;
  search: string;
  provider: string | null;
  /** How many jobs the list's filter matches now. */
  total: number;
}

/** One of the person's actions, as chosen for every matching job. */
export type Choice = { action: "resolve"; verdict: Verdict } | { action: "cancel" } | { action: "retry" };

/** The words of a skip's code. */
const SKIPPED_WHY: Record<string, string> = {
  invalid_transition: "moved meanwhile",
  attempt_blocked: "an attempt is open",
  not_found: "no longer there",
};

/** What the confirmation says a choice risks: the single-job words, for each job. */
export function riskOf(choice: Choice): string {
  if (choice.action === "cancel") return CANCEL_RISK;
  if (choice.action === "retry") return RETRY_RISK;
  if (choice.verdict === "succeeded") {
    return "Records each job as done, with no result; if the provider did not in fact do it, the job shows a success that never happened.";
  }
  return RESOLVE_WORDS[choice.verdict].risk;
}

/** The confirmation's first sentence: the action, the count and the provider(s). */
export function askOf(choice: Choice, count: number, provider: string | null): string {
  const jobs = `${count} ${count === 1 ? "job" : "jobs"}`;
  const where = provider === null ? "at every provider" : `at ${provider}`;
  switch (choice.action) {
    case "resolve":
      return `${RESOLVE_WORDS[choice.verdict].label}: resolve the unknown attempt of ${jobs} ${where}.`;
    case "cancel":
      return `Cancel ${jobs} ${where}.`;
    case "retry":
      return `Retry ${jobs} ${where}.`;
  }
}

/** "198 resolved, 2 skipped: moved meanwhile". */
export function summaryOf(op: BulkOperation): string {
  const verb = { resolve: "resolved", cancel: "cancelled", retry: "retried" }[op.action];
  const done = `${op.changed} ${verb}`;
  if (op.skipped.length === 0) return done;
  const counts = new Map<string, number>();
  for (const s of op.skipped) counts.set(s.code, (counts.get(s.code) ?? 0) + 1);
  const why = [...counts].map(([code, n]) => (counts.size === 1 ? whyOf(code) : `${n} ${whyOf(code)}`));
  return `${done}, ${op.skipped.length} skipped: ${why.join(", ")}`;
}

function whyOf(code: string): string {
  return SKIPPED_WHY[code] ?? code.replace(/_/g, " ");
}

/** The actions the filter allows: resolving needs the unknown jobs alone; none for finished ones. */
export function choicesFor(status: JobStatus | null): Choice[] {
  if (status === "succeeded" || status === "cancelled") return [];
  const resolve: Choice[] =
    status === "unknown" ? (["succeeded", "failed", "abandoned"] as const).map((verdict) => ({ action: "resolve", verdict })) : [];
  return [...resolve, { action: "retry" }, { action: "cancel" }];
}

function labelOf(choice: Choice): string {
  if (choice.action === "resolve") return RESOLVE_WORDS[choice.verdict].label;
  return choice.action === "cancel" ? "Cancel all" : "Retry all";
}

export function BulkActions({ status, search, provider, total }: Props) {
  const { changed } = useLedger();
  const [selected, setSelected] = useState(false);
  const [pending, setPending] = useState<Choice | null>(null);
  // One key per decision: made when the confirmation opens, kept for every click on it, so a
  // second click (or one after a lost answer) finishes the same operation.
  const key = useRef<string | null>(null);
  const running = useRef<string | null>(null);
  const [progress, setProgress] = useState<{ decided: number; matched: number } | null>(null);
  const [result, setResult] = useState<BulkOperation | null>(null);
  const [error, setError] = useState<Shown | null>(null);
  const [busy, setBusy] = useState(false);

  // Another filter is another selection.
  useEffect(() => {
    setSelected(false);
    setPending(null);
    setResult(null);
    setError(null);
  }, [status, search, provider]);

  const choose = (choice: Choice) => {
    key.current = `bulk-${crypto.randomUUID()}`;
    setPending(choice);
    setResult(null);
    setError(null);
  };

  const run = async (choice: Choice) => {
    const request: BulkRequest = {
      action: choice.action,
      filter: { status, search: search === "" ? null : search, provider },
      as: choice.action === "resolve" ? choice.verdict : null,
      provider: null,
      dry_run: false,
    };
    setBusy(true);
    const k = key.current ?? `bulk-${crypto.randomUUID()}`;
    key.current = k;
    const started = await call(() => commands.bulkStart(k, request));
    if (started.status === "error") {
      setBusy(false);
      setError(started.error);
      return;
    }
    const op = started.data.operation;
    if (op.id === null) {
      setBusy(false);
      return;
    }
    running.current = op.id;
    setProgress({ decided: op.changed + op.skipped.length, matched: op.matched });
    const id = op.id;
    // The backend's progress events, heard while this operation runs.
    const stop = await events.bulkProgressed
      .listen((e) => {
        if (e.payload.id === running.current) setProgress({ decided: e.payload.progress.decided, matched: e.payload.progress.matched });
      })
      .catch(() => () => undefined);
    const done = await call(() => commands.bulkRun(id));
    stop();
    setBusy(false);
    setProgress(null);
    running.current = null;
    changed();
    if (done.status === "error") {
      setError(done.error);
      return;
    }
    key.current = null;
    setPending(null);
    setSelected(false);
    setResult(done.data);
  };

  const choices = choicesFor(status);
  const filtered = status !== null || search !== "" || provider !== null;
  if (!filtered && result === null) return null;
  return (
    <div className="bulk" aria-label="Every matching job" data-testid="bulk">
      {error !== null && <ErrorBanner error={error} />}
      {!selected && result === null && total > 0 && choices.length > 0 && (
        <button type="button" className="button" onClick={() => setSelected(true)} data-testid="bulk-select">
          Select all {total} matching
        </button>
      )}
      {selected && pending === null && (
        <div className="actions">
          <span className="muted">{total} selected:</span>
          {choices.map((choice) => (
            <button
              key={labelOf(choice)}
              type="button"
              className={choice.action === "cancel" ? "button danger" : "button"}
              onClick={() => choose(choice)}
              data-testid={`bulk-${choice.action === "resolve" ? choice.verdict : choice.action}`}
            >
              {labelOf(choice)}…
            </button>
          ))}
          <button type="button" className="button" onClick={() => setSelected(false)}>
            Clear
          </button>
        </div>
      )}
      {pending !== null && (
        <div className="confirm" role="alertdialog" aria-label="Confirm" data-testid="bulk-confirm">
          <p>
            <strong>{askOf(pending, total, provider)}</strong> For each job: {riskOf(pending)} A job that moved meanwhile
            is skipped, never overwritten.
          </p>
          {progress !== null && (
            <p data-testid="bulk-progress">
              <progress max={progress.matched} value={progress.decided} /> {progress.decided} of {progress.matched}{" "}
              decided
            </p>
          )}
          <div className="actions">
            <button type="button" className="button danger" disabled={busy} onClick={() => void run(pending)} data-testid="bulk-confirm-yes" autoFocus>
              {labelOf(pending)}: {total} {total === 1 ? "job" : "jobs"}
            </button>
            <button type="button" className="button" disabled={busy} onClick={() => setPending(null)}>
              Keep them as they are
            </button>
          </div>
        </div>
      )}
      {result !== null && (
        <div className="bulk-result" data-testid="bulk-result">
          <p>
            <strong>{summaryOf(result)}</strong>{" "}
            <button type="button" className="button" onClick={() => setResult(null)}>
              Done
            </button>
          </p>
          {result.skipped.length > 0 && (
            <ul className="skipped" data-testid="bulk-skipped">
              {result.skipped.map((s) => (
                <li key={s.job_id}>
                  <code className="id" title={s.job_id}>
                    {shortId(s.job_id)}
                  </code>{" "}
                  {whyOf(s.code)}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </div>
  );
}
