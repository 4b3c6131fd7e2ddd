// The Jobs screen: status, provider and age of every job, filtered by status, in a list that
// renders only the rows in view and fetches keyset pages as they scroll into it.
import { useCallback, useEffect, useRef, useState } from "react";

import { call, useLedger } from "../api";
import { commands, type Job, type JobStatus } from "../bindings";
import { ErrorBanner } from "../components/ErrorBanner";
import { StatusBadge } from "../components/StatusBadge";
import { StatusFilter } from "../components/StatusFilter";
import { FirstRun } from "../components/FirstRun";
import type { Shown } from "../errors";
import { exactTime, routeOf, shortId, timeAgo } from "../format";
import { emptyPages, forRefresh, knownRows, missing, pageOf, PAGE, rowAt, withPage, type Pages } from "../pager";

/** Height of one row, in pixels; fixed so the list can place rows without measuring them. */
export const ROW = 30;
/** Rows rendered beyond the visible ones on each side, so fast scrolling shows no gap. */
const OVERSCAN = 10;

interface Props {
  now: number;
  open: (jobId: string) => void;
  go: (screen: "submit" | "providers") => void;
}

export function JobsScreen({ now, open, go }: Props) {
  const [status, setStatus] = useState<JobStatus | null>(null);
  const [pages, setPages] = useState<Pages>(emptyPages);
  const [error, setError] = useState<Shown | null>(null);
  const [view, setView] = useState({ top: 0, height: 600 });
  const list = useRef<HTMLDivElement>(null);
  const loading = useRef(new Set<number>());
  const generation = useRef(0);
  const { seq } = useLedger();

  const first = Math.max(0, Math.floor(view.top / ROW) - OVERSCAN);
  const last = Math.max(first, Math.ceil((view.top + view.height) / ROW) + OVERSCAN);
  // Where the view is when a page arrives, not when it was asked for: far pages are dropped.
  const around = useRef(0);
  around.current = pageOf(first);

  const fetchPage = useCallback(
    (p: Pages, i: number, refresh = false) => {
      if (loading.current.has(i)) return;
      loading.current.add(i);
      const gen = generation.current;
      const after = p.starts[i] ?? null;
      void call(() => commands.listJobs(status, after, PAGE)).then((result) => {
        loading.current.delete(i);
        if (gen !== generation.current) return;
        if (result.status === "error") {
          setError(result.error);
          return;
        }
        setError(null);
        setPages((cur) => withPage(cur, i, result.data.jobs, result.data.next, around.current, refresh));
      });
    },
    [status],
  );

  // A new filter starts over.
  useEffect(() => {
    generation.current++;
    loading.current.clear();
    setPages(emptyPages());
    list.current?.scrollTo({ top: 0 });
  }, [status]);

  // A change in the ledger: re-read the pages in view (statuses change in place) and drop the
  // rest; near the top, start over so new jobs appear first.
  useEffect(() => {
    if (seq === 0) return;
    setPages((cur) => {
      if (view.top < PAGE * ROW) {
        generation.current++;
        loading.current.clear();
        return emptyPages();
      }
      const inView = [pageOf(first), pageOf(last)].filter((i, k, all) => all.indexOf(i) === k);
      for (const i of inView) fetchPage(cur, i, true);
      return forRefresh(cur, inView);
    });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [seq]);

  // Fetch what is in view and not in memory.
  useEffect(() => {
    for (const i of missing(pages, first, last)) fetchPage(pages, i);
  }, [pages, first, last, fetchPage]);

  useEffect(() => {
    const el = list.current;
    if (el === null) return;
    const measure = () => setView({ top: el.scrollTop, height: el.clientHeight });
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, []);

  const total = knownRows(pages);
  const shownRows: { index: number; job: Job | undefined }[] = [];
  for (let i = first; i <= Math.min(last, total - 1); i++) shownRows.push({ index: i, job: rowAt(pages, i) });
  const empty = !pages.more && total === 0;

  return (
    <>
      <nav className="toolbar">
        <StatusFilter value={status} onChange={setStatus} />
        <span className="spacer" />
        <span className="muted" data-testid="jobs-loaded">
          {pages.more ? `${total - PAGE}+ jobs` : `${total} ${total === 1 ? "job" : "jobs"}`}
        </span>
      </nav>
      {error !== null && <ErrorBanner error={error} />}
      {empty && status === null && <FirstRun go={go} />}
      {empty && status !== null && <p className="empty">No {status} jobs.</p>}
      {!empty && (
        <div className="jobs-head" role="row">
          <span className="col-id" role="columnheader">Job</span>
          <span className="col-key" role="columnheader">Idempotency key</span>
          <span className="col-status" role="columnheader">Status</span>
          <span className="col-route" role="columnheader">Provider</span>
          <span className="col-created" role="columnheader">Age</span>
        </div>
      )}
      <div
        className="jobs-list"
        ref={list}
        role="grid"
        aria-rowcount={total}
        aria-label="Jobs, newest first"
        data-fetched-rows={pages.fetched}
        data-refreshed-rows={pages.refreshed}
        data-last-shown={Math.min(last, total - 1)}
        hidden={empty}
        onScroll={(e) => setView({ top: e.currentTarget.scrollTop, height: e.currentTarget.clientHeight })}
      >
        <div style={{ height: total * ROW, position: "relative" }}>
          {shownRows.map(({ index, job }) => (
            <JobRow key={index} index={index} job={job} now={now} open={open} />
          ))}
        </div>
      </div>
    </>
  );
}

function JobRow({ index, job, now, open }: { index: number; job: Job | undefined; now: number; open: (id: string) => void }) {
  const style = { top: index * ROW, height: ROW };
  if (job === undefined) {
    return (
      <div className="job-row placeholder" style={style} role="row" aria-rowindex={index + 1}>
        <span className="muted">…</span>
      </div>
    );
  }
  const route = routeOf(job.intent);
  return (
    <div
      className="job-row"
      style={style}
      role="row"
      aria-rowindex={index + 1}
      tabIndex={0}
      data-job-id={job.id}
      onClick={() => open(job.id)}
      onKeyDown={(e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          open(job.id);
        }
      }}
    >
      <code className="col-id id" title={job.id}>{shortId(job.id)}</code>
      <code className="col-key key clip" title={job.idempotency_key}>{job.idempotency_key}</code>
      <span className="col-status">
        <StatusBadge status={job.status} />
        {job.flagged_for_review && (
          <span className="flag" title="A late answer or a contradiction that a person should look at">
            review
          </span>
        )}
      </span>
      <span className="col-route clip">{route.join(" → ")}</span>
      <time className="col-created" dateTime={job.created_at} title={exactTime(job.created_at)}>
        {timeAgo(job.created_at, now)}
      </time>
    </div>
  );
}
