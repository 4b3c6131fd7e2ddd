// What the list says when it has no rows.
import type { JobStatus } from "../bindings";

const EXAMPLE = `onejob submit --key order-1 --intent '{"route": ["sandbox"], "input": {"prompt": "hello"}}'`;

/** For the whole list: how to submit a first job; for one status: that none has it. */
export function EmptyState({ status }: { status: JobStatus | null }) {
  if (status !== null) {
    return (
      <div className="empty">
        <p className="empty-title">No {status} jobs.</p>
      </div>
    );
  }
  return (
    <div className="empty">
      <p className="empty-title">No jobs yet.</p>
      <p>
        Submit one with the <code>onejob</code> command line; it shares this app&rsquo;s
        database, so the job appears here:
      </p>
      <pre className="empty-example">
        <code>{EXAMPLE}</code>
      </pre>
      <p className="muted">
        The key names one intent: submitting it again returns the same job instead of a new
        one.
      </p>
    </div>
  );
}
