// The Jobs screen: status, provider and age of every job, filtered by status, provider, a
// search (idempotency key or job id prefix), the open attempt's error kind and when the job was
// created, in a list as
// long as the jobs' count that renders only the rows in view and fetches keyset pages for them
// from the nearer end.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";

import { call, useLedger, useRead } from "../api";
import { commands, type JobStatus, type JobSummary } from "../bindings";
import { describe, filterOf, narrows, UNKNOWN_KINDS } from "../listFilter";
import { BulkActions } from "../components/BulkActions";
import { ErrorBanner } from "../components/ErrorBanner";
import { StatusBadge } from "../components/StatusBadge";
import { StatusFilter } from "../components/StatusFilter";
import { FirstRun } from "../components/FirstRun";
import { takeOpeningCount, takeOpeningList, takeOpeningPage } from "../opening";
import type { Shown } from "../errors";
import { exactTime, shortId, timeAgo } from "../format";
import {
  cursorOf,
  emptyPages,
  inView,
  keyOf,
  missing,
  PAGE,
  rowAt,
  withPage,
  type PageRef,
  type Pages,
} from "../pager";

/** Height of one row, in pixels; fixed so the list can place rows without measuring them. */
export const ROW = 30;
/** Rows rendered beyond the visible ones on each side, so fast scrolling shows no gap. */
const OVERSCAN = 10;
/** Whether the window has reported its first content (for the cold-start benchmark). */
let reported = false;

interface Props {
  now: number;
  open: (jobId: string) => void;
  go: (screen: "submit" | "providers") => void;
  /** The status the list opens filtered to (the Spend screen's "Show the unknown jobs"). */
  status?: JobStatus | undefined;
}

export function JobsScreen({ now, open, go, status: filteredTo }: Props) {
  const [status, setStatus] = useState<JobStatus | null>(filteredTo ?? null);
  const [typed, setTyped] = useState("");
  const search = useSettled(typed.trim(), 200);
  const [provider, setProvider] = useState<string | null>(null);
  const [typedKind, setTypedKind] = useState("");
  const errorKind = useSettled(typedKind, 200);
  const [createdAfter, setCreatedAfter] = useState("");
  const [createdBefore, setCreatedBefore] = useState("");
  const providers = useRead(() => commands.providers(), []);
  // One filter for the list, its count and "Select all N matching".
  const filter = useMemo(
    () => filterOf({ status, search, provider, errorKind, createdAfter, createdBefore }),
    [status, search, provider, errorKind, createdAfter, createdBefore],
  );
  const filtered = narrows(filter);
  // Null until the jobs are counted: the list's length comes first. The opening reads, when
  // both are back already, are the first state: the first render shows the newest jobs.
  const [pages, setPages] = useState<Pages | null>(() => (filteredTo === undefined ? takeOpeningList() : null));
  const opened = useRef(pages !== null);
  const [error, setError] = useState<Shown | null>(null);
  const [view, setView] = useState({ top: 0, height: 600 });
  const list = useRef<HTMLDivElement>(null);
  const loading = useRef(new Set<string>());
  const generation = useRef(0);
  const { seq } = useLedger();

  const first = Math.max(0, Math.floor(view.top / ROW) - OVERSCAN);
  const last = Math.max(first, Math.ceil((view.top + view.height) / ROW) + OVERSCAN);
  // Where the view is when a page arrives, not when it was asked for: far rows are dropped.
  const around = useRef(0);
  around.current = first;
  const shown = useRef({ first, last });
  shown.current = { first, last };

  // Reads one page of the list as filtered now: the opening page when it is the one asked for.
  const readPage = useCallback(
    (after: string | null, oldestFirst: boolean) => {
      return () => takeOpeningPage(filter, after, PAGE, oldestFirst) ?? commands.listJobs(filter, after, PAGE, oldestFirst);
    },
    [filter],
  );

  const fetchPage = useCallback(
    (p: Pages, ref: PageRef, refresh = false) => {
      const key = keyOf(ref);
      const after = cursorOf(p, ref);
      if (loading.current.has(key) || after === undefined) return;
      loading.current.add(key);
      const gen = generation.current;
      void call(readPage(after, ref.end === "bottom")).then((result) => {
        if (gen !== generation.current) return;
        loading.current.delete(key);
        if (result.status === "error") {
          setError(result.error);
          return;
        }
        setError(null);
        setPages((cur) =>
          cur === null ? cur : withPage(cur, ref, result.data.jobs, result.data.next, around.current, refresh),
        );
      });
    },
    [readPage],
  );

  // The list as last rendered, for reads that decide between refreshing and starting over.
  const current = useRef(pages);
  current.current = pages;

  // Starts the list over at `total` rows. In view of its top, the rows already shown stay
  // until the new first page is there and are then replaced in one render: the list never
  // flashes placeholders while the ledger changes, so a click on a row always lands on it.
  const startOver = useCallback(
    (total: number) => {
      generation.current++;
      loading.current.clear();
      const fresh = emptyPages(total);
      if (total === 0 || shown.current.first >= PAGE) {
        setPages(fresh);
        return;
      }
      const gen = generation.current;
      void call(readPage(null, false)).then((result) => {
        if (gen !== generation.current) return;
        // Pages asked for meanwhile were of the old list.
        generation.current++;
        loading.current.clear();
        if (result.status === "error") {
          setError(result.error);
          setPages(fresh);
          return;
        }
        setError(null);
        setPages(withPage(fresh, { end: "top", i: 0 }, result.data.jobs, result.data.next, around.current));
      });
    },
    [readPage],
  );

  // Counts the jobs; an unchanged count keeps the list and re-reads the pages in view
  // (statuses change in place), otherwise the list starts over at its new length.
  const recount = useCallback(
    (inPlace: boolean) => {
      const gen = generation.current;
      const read = () => takeOpeningCount(filter) ?? commands.countJobs(filter);
      void call(read).then((result) => {
        if (gen !== generation.current) return;
        if (result.status === "error") {
          setError(result.error);
          return;
        }
        const cur = current.current;
        if (inPlace && cur !== null && cur.total === result.data && !cur.stale) {
          for (const ref of inView(cur, shown.current.first, shown.current.last)) fetchPage(cur, ref, true);
          return;
        }
        startOver(result.data);
      });
    },
    [filter, fetchPage, startOver],
  );

  // A new filter starts over; the first, unfiltered list is already there when it was opened.
  useEffect(() => {
    if (opened.current) {
      opened.current = false;
      // The opening reads were made before the window listened for the ledger's changes (the
      // listener starts with this render's effects): once it listens, read the list again in
      // place, so a change made in between is not missed. Unchanged, nothing moves on screen.
      const again = setTimeout(() => recount(true), 0);
      return () => clearTimeout(again);
    }
    generation.current++;
    loading.current.clear();
    setPages(null);
    list.current?.scrollTo({ top: 0 });
    recount(false);
  }, [recount]);

  // A change in the ledger: near the top, start over so new jobs appear first.
  useEffect(() => {
    if (seq === 0) return;
    recount(view.top >= PAGE * ROW);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [seq]);

  // A page found fewer jobs than counted: count again.
  const stale = pages?.stale ?? false;
  useEffect(() => {
    if (stale) recount(false);
  }, [stale, recount]);

  // Fetch what is in view and not in memory.
  useEffect(() => {
    if (pages === null) return;
    for (const ref of missing(pages, first, last)) fetchPage(pages, ref);
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

  const total = pages?.total ?? 0;
  // A job's row is keyed by the job, so it keeps its element while the job moves down the
  // list: an element found (or clicked) for a job never shows another one. A job read twice
  // (two pages read at different moments) is keyed by its place the second time.
  const shownRows: { key: string; index: number; job: JobSummary | undefined }[] = [];
  if (pages !== null) {
    const keyed = new Set<string>();
    for (let i = first; i <= Math.min(last, total - 1); i++) {
      const job = rowAt(pages, i);
      const key = job !== undefined && !keyed.has(job.id) ? job.id : `row-${i}`;
      if (job !== undefined) keyed.add(job.id);
      shownRows.push({ key, index: i, job });
    }
  }
  const empty = pages !== null && total === 0;
  // The first content: a job row, or the first-run panel of an empty ledger.
  const content = empty || shownRows.some((r) => r.job !== undefined);
  useEffect(() => {
    if (!content || reported) return;
    reported = true;
    // After the frame that shows it has been painted.
    requestAnimationFrame(() => setTimeout(() => void commands.firstPaint().catch(() => undefined), 0));
  }, [content]);

  return (
    <>
      <nav className="toolbar">
        <StatusFilter value={status} onChange={setStatus} />
        <input
          type="search"
          className="find"
          placeholder="Find: idempotency key or job id"
          aria-label="Find a job by its idempotency key or the start of its id"
          value={typed}
          onChange={(e) => setTyped(e.currentTarget.value)}
          data-testid="jobs-search"
        />
        <select
          aria-label="Filter by provider"
          value={provider ?? ""}
          onChange={(e) => setProvider(e.currentTarget.value === "" ? null : e.currentTarget.value)}
          data-testid="jobs-provider"
        >
          <option value="">every provider</option>
          {providers.data?.map((p) => (
            <option key={p.name} value={p.name}>
              {p.name}
            </option>
          ))}
        </select>
        <span className="spacer" />
        <span className="muted" data-testid="jobs-loaded">
          {pages === null ? "…" : `${total} ${total === 1 ? "job" : "jobs"}`}
        </span>
      </nav>
      <nav className="toolbar toolbar-more" aria-label="More filters">
        <label>
          Error kind{" "}
          <input
            type="search"
            className="kind"
            list="unknown-kinds"
            placeholder="soft_timeout, connection_broken…"
            aria-label="Filter by the open attempt's error kind"
            value={typedKind}
            onChange={(e) => setTypedKind(e.currentTarget.value)}
            data-testid="jobs-error-kind"
          />
          <datalist id="unknown-kinds">
            {UNKNOWN_KINDS.map((k) => (
              <option key={k} value={k} />
            ))}
          </datalist>
        </label>
        <CreatedBound side="after" text="Created after" value={createdAfter} onChange={setCreatedAfter} />
        <CreatedBound side="before" text="before" value={createdBefore} onChange={setCreatedBefore} />
      </nav>
      {error !== null && <ErrorBanner error={error} />}
      <BulkActions filter={filter} total={total} />
      {empty && !filtered && <FirstRun go={go} />}
      {empty && filtered && (
        <p className="empty" data-testid="jobs-none">
          {describe(filter)}
        </p>
      )}
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
        data-fetched-rows={pages?.fetched ?? 0}
        data-refreshed-rows={pages?.refreshed ?? 0}
        data-last-shown={Math.min(last, total - 1)}
        hidden={empty}
        onScroll={(e) => setView({ top: e.currentTarget.scrollTop, height: e.currentTarget.clientHeight })}
      >
        <div style={{ height: total * ROW, position: "relative" }}>
          {shownRows.map(({ key, index, job }) => (
            <JobRow key={key} index={index} job={job} now={now} open={open} />
          ))}
        </div>
      </div>
    </>
  );
}

/** One end of the filter on when jobs were created, typed in local time. */
function CreatedBound({
  side,
  text,
  value,
  onChange,
}: {
  side: "after" | "before";
  text: string;
  value: string;
  onChange: (value: string) => void;
}) {
  return (
    <label>
      {text}{" "}
      <input
        type="datetime-local"
        aria-label={`Created ${side} (local time)`}
        value={value}
        onChange={(e) => onChange(e.currentTarget.value)}
        data-testid={`jobs-created-${side}`}
      />
    </label>
  );
}

/** `value`, once it has stayed the same for `ms`: a search runs when typing pauses. */
function useSettled(value: string, ms: number): string {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = window.setTimeout(() => setSettled(value), ms);
    return () => window.clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

function JobRow({ index, job, now, open }: { index: number; job: JobSummary | undefined; now: number; open: (id: string) => void }) {
  const style = { top: index * ROW, height: ROW };
  if (job === undefined) {
    return (
      <div className="job-row placeholder" style={style} role="row" aria-rowindex={index + 1}>
        <span className="muted">…</span>
      </div>
    );
  }
  const route = job.route;
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
