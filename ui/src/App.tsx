// The onejob window: the jobs list with its filter and the "needs attention" count.
import { useCallback, useState } from "react";

import type { JobStatus } from "./bindings";
import { EmptyState } from "./components/EmptyState";
import { ErrorBanner } from "./components/ErrorBanner";
import { JobsTable } from "./components/JobsTable";
import { StatusFilter } from "./components/StatusFilter";
import { useJobs, useNeedsAttention, useNow } from "./jobs";

/** The whole window. */
export function App() {
  const [status, setStatus] = useState<JobStatus | null>(null);
  const list = useJobs(status);
  const attention = useNeedsAttention();
  const now = useNow(15_000);

  const { reload: reloadList } = list;
  const { reload: reloadAttention } = attention;
  const refresh = useCallback(() => {
    reloadList();
    reloadAttention();
  }, [reloadList, reloadAttention]);

  const needing = attention.count ?? 0;
  return (
    <div className="app">
      <header className="topbar">
        <h1 className="title">onejob</h1>
        <span
          className={needing > 0 ? "attention attention-some" : "attention"}
          title="Jobs whose outcome is unknown, and late answers flagged for review"
        >
          needs attention <strong>{attention.count ?? "–"}</strong>
        </span>
        <span className="spacer" />
        <button type="button" className="button" onClick={refresh}>
          Refresh
        </button>
      </header>

      <nav className="toolbar">
        <StatusFilter value={status} onChange={setStatus} />
      </nav>

      <main className="content">
        {attention.error !== null && <ErrorBanner error={attention.error} />}
        {list.error !== null && <ErrorBanner error={list.error} onRetry={list.reload} />}
        {list.jobs.length > 0 && <JobsTable jobs={list.jobs} now={now} />}
        {list.jobs.length === 0 && !list.loading && list.error === null && (
          <EmptyState status={status} />
        )}
        <div className="pager">
          {list.loading && <span className="muted">Loading…</span>}
          {!list.loading && list.next !== null && (
            <button type="button" className="button" onClick={list.loadMore}>
              Load more
            </button>
          )}
          {list.jobs.length > 0 && (
            <span className="muted">
              {list.jobs.length} shown{list.next === null ? ", all loaded" : ""}
            </span>
          )}
        </div>
      </main>
    </div>
  );
}
