// The Jobs list's memory: keyset pages fetched on demand as rows scroll into view, and
// dropped again when they are far from it, so 100,000 jobs never sit in memory at once.
import type { Job } from "./bindings";

/** Rows per page fetched. */
export const PAGE = 100;
/** Pages kept on either side of the visible ones; the rest are dropped. */
export const KEEP = 2;

/** What is known of the list: the cursor each page starts after, and the resident pages. */
export interface Pages {
  /** `starts[i]` is the `after` cursor of page i (null for the first). */
  starts: (string | null)[];
  /** Whether the page after the last known one exists. */
  more: boolean;
  /** Rows of the pages in memory, by page number. */
  rows: Map<number, Job[]>;
  /** Rows fetched to fill pages scrolled into view, for the record (and the test that reads it). */
  fetched: number;
  /** Rows fetched again because the ledger changed. */
  refreshed: number;
  /** The last page's length, once it is known to be the last. */
  lastLength: number;
}

export function emptyPages(): Pages {
  return { starts: [null], more: true, rows: new Map(), fetched: 0, refreshed: 0, lastLength: 0 };
}

/** How many rows the list is known to have so far (the scroll height). */
export function knownRows(p: Pages): number {
  // Every page but the last is full; a page not fetched yet counts as full until it is.
  return p.more ? p.starts.length * PAGE : (p.starts.length - 1) * PAGE + p.lastLength;
}

/** The page holding row `index`. */
export function pageOf(index: number): number {
  return Math.floor(index / PAGE);
}

/** The pages needed to show rows `first..=last`, which are not in memory yet. */
export function missing(p: Pages, first: number, last: number): number[] {
  const out: number[] = [];
  for (let i = pageOf(first); i <= pageOf(last); i++) {
    if (i < p.starts.length && !p.rows.has(i)) out.push(i);
  }
  return out;
}

/** Records page `i` as fetched (with the next page's cursor), and drops far pages. */
export function withPage(
  p: Pages,
  i: number,
  jobs: Job[],
  next: string | null,
  around: number,
  refresh = false,
): Pages {
  const starts = p.starts.slice();
  let more = p.more;
  let lastLength = p.lastLength;
  if (i === starts.length - 1) {
    if (next !== null) starts.push(next);
    else {
      more = false;
      lastLength = jobs.length;
    }
  }
  const rows = new Map(p.rows);
  rows.set(i, jobs);
  for (const k of rows.keys()) {
    if (Math.abs(k - around) > KEEP + 1) rows.delete(k);
  }
  const fetched = refresh ? p.fetched : p.fetched + jobs.length;
  const refreshed = refresh ? p.refreshed + jobs.length : p.refreshed;
  return { starts, more, rows, fetched, refreshed, lastLength };
}

/** The job at row `index`, if its page is in memory. */
export function rowAt(p: Pages, index: number): Job | undefined {
  return p.rows.get(pageOf(index))?.[index % PAGE];
}

/** The list after a change in the ledger: only the pages in view stay, to be fetched again. */
export function forRefresh(p: Pages, inView: number[]): Pages {
  const rows = new Map([...p.rows].filter(([i]) => inView.includes(i)));
  return { ...p, rows };
}
