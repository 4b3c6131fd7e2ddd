// The Jobs list's memory: the list is as long as the jobs' count, and keyset pages are fetched
// from whichever end (newest or oldest) is nearer to the rows in view, so a jump to the end
// costs one page; pages far from the view are dropped, so 100,000 jobs never sit in memory.
import type { JobSummary } from "./bindings";

/** Rows per page fetched. */
export const PAGE = 100;
/** Pages kept on either side of the visible ones; the rest are dropped. */
export const KEEP = 2;

/** Which end a page is counted from: "top" pages are newest first, "bottom" oldest first. */
export type End = "top" | "bottom";

/** One page: the i-th from its end. */
export interface PageRef {
  end: End;
  i: number;
}

/** What is known of the list. */
export interface Pages {
  /** How many rows the list has (the count of jobs when it was read). */
  total: number;
  /** `starts[i]` is the `after` cursor of top page i (null for the first). */
  starts: (string | null)[];
  /** `ends[i]` is the `after` cursor of bottom page i (null for the last). */
  ends: (string | null)[];
  /** Rows in memory, by row number from the top. */
  rows: Map<number, JobSummary>;
  /** Rows fetched to fill pages scrolled into view, for the record (and the test that reads it). */
  fetched: number;
  /** Rows fetched again because the ledger changed. */
  refreshed: number;
  /** Whether a page found the list shorter than `total`: it must be counted again. */
  stale: boolean;
}

export function emptyPages(total: number): Pages {
  return { total, starts: [null], ends: [null], rows: new Map(), fetched: 0, refreshed: 0, stale: false };
}

/** The top page holding row `index`. */
export function pageOf(index: number): number {
  return Math.floor(index / PAGE);
}

/** The bottom page holding row `index`. */
function bottomPageOf(p: Pages, index: number): number {
  return Math.floor((p.total - 1 - index) / PAGE);
}

/** The `after` cursor a page is fetched with, once the page before it on its end was seen. */
export function cursorOf(p: Pages, ref: PageRef): string | null | undefined {
  return ref.end === "top" ? p.starts[ref.i] : p.ends[ref.i];
}

/**
 * The page to fetch towards row `index`: its own page from the end that reaches it in fewer
 * fetches, or, when neither reaches it yet, the next page along the cheaper end.
 */
export function planFor(p: Pages, index: number): PageRef {
  const top = pageOf(index);
  const bottom = bottomPageOf(p, index);
  const topCost = Math.max(0, top - (p.starts.length - 1));
  const bottomCost = Math.max(0, bottom - (p.ends.length - 1));
  if (topCost < bottomCost || (topCost === bottomCost && top <= bottom)) {
    return { end: "top", i: Math.min(top, p.starts.length - 1) };
  }
  return { end: "bottom", i: Math.min(bottom, p.ends.length - 1) };
}

/** A page's name, for sets of pages being fetched. */
export function keyOf(ref: PageRef): string {
  return `${ref.end}:${ref.i}`;
}

/** The pages to fetch to show rows `first..=last` that are not in memory. */
export function missing(p: Pages, first: number, last: number): PageRef[] {
  const out = new Map<string, PageRef>();
  for (let index = first; index <= Math.min(last, p.total - 1); index++) {
    if (p.rows.has(index)) continue;
    const ref = planFor(p, index);
    out.set(keyOf(ref), ref);
  }
  return [...out.values()];
}

/** The pages that show rows `first..=last`, to read again when the ledger changes. */
export function inView(p: Pages, first: number, last: number): PageRef[] {
  const out = new Map<string, PageRef>();
  for (let index = first; index <= Math.min(last, p.total - 1); index++) {
    const ref = planFor(p, index);
    if (cursorOf(p, ref) !== undefined) out.set(keyOf(ref), ref);
  }
  return [...out.values()];
}

/** The row number of a page's `k`-th job. */
function rowOf(p: Pages, ref: PageRef, k: number): number {
  return ref.end === "top" ? ref.i * PAGE + k : p.total - 1 - ref.i * PAGE - k;
}

/**
 * Records a fetched page (and the cursor of the page after it on its end), and drops rows
 * more than KEEP pages away from row `around`.
 */
export function withPage(
  p: Pages,
  ref: PageRef,
  jobs: JobSummary[],
  next: string | null,
  around: number,
  refresh = false,
): Pages {
  const chain = (ref.end === "top" ? p.starts : p.ends).slice();
  if (ref.i === chain.length - 1 && next !== null) chain.push(next);
  // The last page on an end that does not reach the other end: jobs left the list meanwhile.
  const stale = p.stale || (next === null && ref.i * PAGE + jobs.length < p.total);
  const rows = new Map(p.rows);
  jobs.forEach((job, k) => {
    const index = rowOf(p, ref, k);
    if (index >= 0 && index < p.total) rows.set(index, job);
  });
  for (const index of rows.keys()) {
    if (Math.abs(index - around) > (KEEP + 1) * PAGE) rows.delete(index);
  }
  return {
    ...p,
    starts: ref.end === "top" ? chain : p.starts,
    ends: ref.end === "bottom" ? chain : p.ends,
    rows,
    fetched: refresh ? p.fetched : p.fetched + jobs.length,
    refreshed: refresh ? p.refreshed + jobs.length : p.refreshed,
    stale,
  };
}

/** The job at row `index`, if its page is in memory. */
export function rowAt(p: Pages, index: number): JobSummary | undefined {
  return p.rows.get(index);
}
