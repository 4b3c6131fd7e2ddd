// The Job screen: the intent, key and fingerprint, the result, the attempt timeline, the event
// history, and the actions valid in the job's current state.
import { useEffect, useState } from "react";

import { call, useLedger, useRead } from "../api";
import { actionsFor, CANCEL_RISK, RESOLVE_WORDS } from "../actions";
import { commands, type Attempt, type JobView, type Value, type Verdict } from "../bindings";
import { CopyId } from "../components/CopyId";
import { ErrorBanner } from "../components/ErrorBanner";
import { History } from "../components/History";
import { StatusBadge } from "../components/StatusBadge";
import { Timeline, tokens } from "../components/Timeline";
import { ValueView } from "../components/ValueView";
import { WhatIsKnown } from "../components/WhatIsKnown";
import type { Shown } from "../errors";
import { exactTime, timeAgo } from "../format";
import { costWords, isZero } from "../money";

export function JobScreen({ id, now, back }: { id: string; now: number; back: () => void }) {
  const detail = useRead(() => commands.job(id), [id]);
  return (
    <section className="screen job" aria-labelledby="job-title" data-job-id={id}>
      <div className="screen-head">
        <button type="button" className="button" onClick={back}>
          ← Jobs
        </button>
        <h2 id="job-title">Job</h2>
        {detail.data !== null && <StatusBadge status={detail.data.job.status} />}
        {detail.data?.job.flagged_for_review === true && (
          <span className="flag" data-testid="job-flagged">
            flagged for review
          </span>
        )}
      </div>
      {detail.error !== null && <ErrorBanner error={detail.error} />}
      {detail.data !== null && <JobBody detail={detail.data} now={now} />}
    </section>
  );
}

/** Whether the Job screen has reported showing its first job, for the app's benchmark. */
let reported = false;

function JobBody({ detail, now }: { detail: JobView; now: number }) {
  const { job, attempts, events } = detail;
  useEffect(() => {
    if (reported) return;
    reported = true;
    // After the frame that shows it has been painted.
    requestAnimationFrame(() => setTimeout(() => void commands.jobPaint().catch(() => undefined), 0));
  }, []);
  return (
    <>
      {job.flagged_for_review && (
        <p className="review-note" role="note">
          An answer arrived that could not be used (after a cancel, after another answer won, or after
          &ldquo;it did not happen&rdquo;). The provider may have done the work: check with it before
          acting again.
        </p>
      )}
      <dl className="facts">
        <dt>Job</dt>
        <dd><CopyId value={job.id} full /></dd>
        <dt>Idempotency key</dt>
        <dd><CopyId value={job.idempotency_key} full testId="job-key" /></dd>
        <dt>Fingerprint</dt>
        <dd><CopyId value={job.fingerprint} /></dd>
        <dt>Created</dt>
        <dd><time dateTime={job.created_at} title={exactTime(job.created_at)}>{timeAgo(job.created_at, now)}</time></dd>
        <dt>Version</dt>
        <dd>{job.version}</dd>
        <dt>Token usage</dt>
        <dd data-testid="job-tokens" title="The sum over every attempt that reported usage">
          {detail.usage === null ? "none reported" : tokens(detail.usage)}
        </dd>
        {detail.cost.length > 0 && (
          <>
            <dt>Cost</dt>
            <dd data-testid="job-cost" title="The sum over its attempts, one line per currency, as the ledger counted it">
              {detail.cost.map((c) => (
                <span key={c.currency} className={isZero(c.at_risk) ? "cost-line" : "cost-line at-risk"} data-currency={c.currency}>
                  {costWords(c)}
                </span>
              ))}
            </dd>
          </>
        )}
        {job.error !== null && (
          <>
            <dt>Error</dt>
            <dd><code>{job.error.code}</code> {job.error.message}</dd>
          </>
        )}
      </dl>
      <div className="two">
        <div>
          <h3>Intent</h3>
          <ValueView shown={job.intent} jobId={job.id} part={{ part: "intent" }} whole={(v) => <pre className="json">{pretty(v)}</pre>} />
        </div>
        <div>
          <h3>Result</h3>
          {job.result === null ? (
            <p className="muted">No result yet.</p>
          ) : (
            <ValueView
              shown={job.result}
              jobId={job.id}
              part={{ part: "result" }}
              whole={(v) => <pre className="json" data-testid="job-result">{pretty(v)}</pre>}
            />
          )}
        </div>
      </div>
      <h3>Attempts</h3>
      <Timeline attempts={attempts} now={now} />
      <Actions detail={detail} />
      <h3>History</h3>
      <History jobId={job.id} events={events} attempts={attempts} now={now} />
    </>
  );
}

function pretty(value: Value): string {
  return JSON.stringify(value, null, 2);
}

/** A risky action waiting for its confirmation. */
type Pending = { verdict: Verdict; attempt: Attempt } | { cancel: true } | null;

const RISK = RESOLVE_WORDS;

function Actions({ detail }: { detail: JobView }) {
  const actions = actionsFor(detail);
  const { changed } = useLedger();
  const [pending, setPending] = useState<Pending>(null);
  const [result, setResult] = useState("");
  const [error, setError] = useState<Shown | null>(null);
  const [busy, setBusy] = useState(false);

  const run = async (action: () => Promise<{ status: "ok" } | { status: "error"; error: Shown }>) => {
    setBusy(true);
    const outcome = await action();
    setBusy(false);
    setError(outcome.status === "error" ? outcome.error : null);
    if (outcome.status === "ok") setPending(null);
    changed();
  };

  const resolve = (attempt: Attempt, verdict: Verdict) => {
    let pasted: Value | null = null;
    if (verdict === "succeeded" && result.trim() !== "") {
      try {
        pasted = JSON.parse(result) as Value;
      } catch {
        setError({ code: "invalid_input", message: "The pasted result is not valid JSON." });
        return;
      }
    }
    void run(() => call(() => commands.resolve(attempt.id, verdict, { result: pasted, note: null, retry_on: null })));
  };

  const job = detail.job;
  return (
    <div className="job-actions" aria-label="Actions">
      {error !== null && <ErrorBanner error={error} />}
      {actions.resolve !== null && (
        <div className="resolve-beside">
          <div className="resolve" data-testid="resolve">
            <p>
              <strong>Attempt #{actions.resolve.number} is unknown.</strong> Its request may or may not
              have reached {actions.resolve.provider}. Check with the provider, then say what happened:
            </p>
            <label className="field">
              <span className="label">Result to record with &ldquo;it went through&rdquo; (optional JSON)</span>
              <textarea
                className="intent"
                rows={3}
                spellCheck={false}
                value={result}
                onChange={(e) => setResult(e.currentTarget.value)}
                data-testid="pasted-result"
              />
            </label>
            <div className="actions">
              {(["succeeded", "failed", "abandoned"] as const).map((verdict) => (
                <button
                  key={verdict}
                  type="button"
                  className="button"
                  disabled={busy}
                  data-testid={`resolve-${verdict}`}
                  onClick={() => actions.resolve !== null && setPending({ verdict, attempt: actions.resolve })}
                >
                  {RISK[verdict].label}…
                </button>
              ))}
            </div>
          </div>
          <WhatIsKnown jobId={job.id} known={detail.known.find((k) => k.attempt_id === actions.resolve?.id)} />
        </div>
      )}
      {pending !== null && "verdict" in pending && (
        <Confirm
          text={RISK[pending.verdict].risk}
          confirm={RISK[pending.verdict].confirm}
          onConfirm={() => resolve(pending.attempt, pending.verdict)}
          onCancel={() => setPending(null)}
        />
      )}
      {pending !== null && "cancel" in pending && (
        <Confirm
          text={CANCEL_RISK}
          confirm="Cancel the job"
          onConfirm={() => void run(() => call(() => commands.cancel(job.id)))}
          onCancel={() => setPending(null)}
        />
      )}
      <div className="actions">
        {actions.retry && (
          <button
            type="button"
            className="button"
            disabled={busy || actions.retryBlocked !== null}
            data-testid="retry"
            onClick={() => void run(() => call(() => commands.retry(job.id, null)))}
          >
            Retry
          </button>
        )}
        {actions.cancel && (
          <button type="button" className="button danger" disabled={busy} data-testid="cancel" onClick={() => setPending({ cancel: true })}>
            Cancel job…
          </button>
        )}
      </div>
      {actions.retry && actions.retryBlocked !== null && (
        <p className="muted" data-testid="retry-blocked">
          Retry is blocked. {actions.retryBlocked}
        </p>
      )}
    </div>
  );
}

function Confirm({ text, confirm, onConfirm, onCancel }: { text: string; confirm: string; onConfirm: () => void; onCancel: () => void }) {
  return (
    <div className="confirm" role="alertdialog" aria-label="Confirm" data-testid="confirm">
      <p>{text}</p>
      <div className="actions">
        <button type="button" className="button danger" onClick={onConfirm} data-testid="confirm-yes" autoFocus>
          {confirm}
        </button>
        <button type="button" className="button" onClick={onCancel}>
          Keep it as it is
        </button>
      </div>
    </div>
  );
}
