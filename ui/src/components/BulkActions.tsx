// "Select all N matching" on the Jobs list (SPEC §16): a person's action on every job the
// list's filter matches, after one confirmation that names the count, the provider and what the
// action risks (the single-job actions' own words), with progress while it runs and the result,
// the skipped jobs listed with why. The confirmation fixes the set as it opens, so the count it
// names is the set a "yes" acts on; declined, the set is discarded.
import { useEffect, useRef, useState } from "react";

import { CANCEL_RISK, RESOLVE_WORDS, RETRY_RISK, SUCCEEDED_MANY_RISK } from "../actions";
import { call, useLedger } from "../api";
import { BULK_PROVIDERS_NAMED, commands, events, type BulkFilter, type BulkOperation, type BulkRequest, type JobStatus, type Verdict } from "../bindings";
import type { Shown } from "../errors";
import { shortId } from "../format";
import { narrows } from "../listFilter";
import { ErrorBanner } from "./ErrorBanner";

interface Props {
  /** The Jobs list's filter, whole: the operation takes exactly the jobs the list shows. */
  filter: BulkFilter;
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
  // The single job's "it went through" records the result a person gives; many record none.
  if (choice.verdict === "succeeded") return SUCCEEDED_MANY_RISK;
  return RESOLVE_WORDS[choice.verdict].risk;
}

/** Where the set's jobs are: the providers the backend named for it, or the filter's one. */
export function whereOf(providers: string[], provider: string | null): string {
  const named = providers.length > 0 ? providers : provider === null ? [] : [provider];
  if (named.length === 0) return "at every provider";
  // The backend names at most BULK_PROVIDERS_NAMED: a set that reached it may reach further.
  const more = providers.length >= BULK_PROVIDERS_NAMED ? " and perhaps others" : "";
  if (named.length === 1) return `at ${named[0]}${more}`;
  const list = more === "" ? `${named.slice(0, -1).join(", ")} and ${named[named.length - 1]}` : named.join(", ");
  return `at ${list}${more}`;
}

/** The confirmation's first sentence: the action, the count and the provider(s). */
export function askOf(choice: Choice, count: number, where: string): string {
  const jobs = `${count} ${count === 1 ? "job" : "jobs"}`;
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

export function BulkActions({ filter, total }: Props) {
  const status = filter.status ?? null;
  const provider = filter.provider ?? null;
  const { changed } = useLedger();
  const [selected, setSelected] = useState(false);
  const [pending, setPending] = useState<Choice | null>(null);
  // The operation the confirmation fixed as it opened: the jobs it names are exactly the ones
  // a "yes" acts on, and one that moves before its turn is skipped, never overwritten.
  const [fixed, setFixed] = useState<BulkOperation | null>(null);
  // A fixed operation not yet run, to discard when the person declines or leaves.
  const unrun = useRef<string | null>(null);
  const running = useRef<string | null>(null);
  const [progress, setProgress] = useState<{ decided: number; matched: number } | null>(null);
  const [result, setResult] = useState<BulkOperation | null>(null);
  const [error, setError] = useState<Shown | null>(null);
  const [busy, setBusy] = useState(false);

  const discard = () => {
    const id = unrun.current;
    unrun.current = null;
    if (id !== null) void call(() => commands.bulkDiscard(id));
  };

  // Another filter is another selection; a set fixed for the old one is discarded.
  useEffect(() => {
    setSelected(false);
    setPending(null);
    setFixed(null);
    setResult(null);
    setError(null);
    return discard;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [filter]);

  const choose = async (choice: Choice) => {
    discard();
    setPending(choice);
    setFixed(null);
    setResult(null);
    setError(null);
    const request: BulkRequest = {
      action: choice.action,
      filter,
      as: choice.action === "resolve" ? choice.verdict : null,
      provider: null,
      dry_run: false,
    };
    setBusy(true);
    // One key per decision, made as the confirmation opens.
    const started = await call(() => commands.bulkStart(`bulk-${crypto.randomUUID()}`, request));
    setBusy(false);
    if (started.status === "error") {
      setPending(null);
      setError(started.error);
      return;
    }
    const op = started.data.operation;
    unrun.current = op.id;
    setFixed(op);
  };

  const decline = () => {
    discard();
    setPending(null);
    setFixed(null);
  };

  const run = async (op: BulkOperation, id: string) => {
    unrun.current = null;
    running.current = id;
    setBusy(true);
    setError(null);
    // From where the operation stands as it starts; then the backend's count after each batch.
    setProgress({ decided: op.changed + op.skipped.length, matched: op.matched });
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
      // The same confirmation runs the same operation again: it finishes what is left.
      setError(done.error);
      return;
    }
    setPending(null);
    setFixed(null);
    setSelected(false);
    setResult(done.data);
  };

  const choices = choicesFor(status);
  if (!narrows(filter) && result === null) return null;
  const count = fixed?.matched ?? total;
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
              onClick={() => void choose(choice)}
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
        <div className="confirm" role="alertdialog" aria-label="Confirm" aria-busy={fixed === null} data-testid="bulk-confirm">
          {fixed === null ? (
            <p className="muted">Fixing the set of matching jobs…</p>
          ) : count === 0 ? (
            <p data-testid="bulk-none">No job matches any more: there is nothing to do.</p>
          ) : (
            <p data-testid="bulk-ask">
              <strong>{askOf(pending, count, whereOf(fixed.providers, provider))}</strong> For each job: {riskOf(pending)} A job that moves
              before its turn is skipped, never overwritten.
            </p>
          )}
          {progress !== null && (
            <p data-testid="bulk-progress">
              <progress max={progress.matched} value={progress.decided} /> {progress.decided} of {progress.matched}{" "}
              decided
            </p>
          )}
          <div className="actions">
            {fixed?.id != null && count > 0 && (
              <button
                type="button"
                className="button danger"
                disabled={busy}
                onClick={() => void run(fixed, fixed.id ?? "")}
                data-testid="bulk-confirm-yes"
                autoFocus
              >
                {labelOf(pending)}: {count} {count === 1 ? "job" : "jobs"}
              </button>
            )}
            <button type="button" className="button" disabled={busy} onClick={decline} data-testid="bulk-confirm-no">
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
                <li key={s.job_id} data-job-id={s.job_id}>
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
