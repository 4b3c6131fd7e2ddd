// The Jobs screen's first two reads, the count of every job and the newest page, asked for
// together as soon as the window's script runs, instead of one after the other once React has
// rendered and run its effects. When both have answered by the Jobs screen's first render, it
// starts from them; otherwise it takes each once, when it asks for exactly that read. Every
// later read, and any other filter, goes to the ledger as before.
import { commands, type BulkFilter } from "./bindings";
import { narrows } from "./listFilter";
import { emptyPages, PAGE, withPage, type Pages } from "./pager";

type Count = ReturnType<typeof commands.countJobs>;
type Page = ReturnType<typeof commands.listJobs>;

let count: Count | null = null;
let page: Page | null = null;
/** What each read answered, once it has (they usually have before React's first render). */
let counted: Awaited<Count> | null = null;
let paged: Awaited<Page> | null = null;

/** Asks for the unfiltered count and the newest page. main.tsx calls it before rendering. */
export function startOpening(): void {
  const [c, p] = [commands.countJobs(null), commands.listJobs(null, null, PAGE, false)];
  [count, page, counted, paged] = [c, p, null, null];
  // Kept for the Jobs screen's first render; a read nobody takes (the window closed first) is
  // not reported as unhandled, and whoever takes the promise still sees its failure.
  c.then((answer) => {
    if (count === c) counted = answer;
  }).catch(() => undefined);
  p.then((answer) => {
    if (page === p) paged = answer;
  }).catch(() => undefined);
}

/**
 * The list of every job as the opening reads found it, if both have answered without an error
 * and neither has been taken: the Jobs screen's first state, so its first render already shows
 * the newest jobs (or the first-run panel). Takes both; else null, and leaves them.
 */
export function takeOpeningList(): Pages | null {
  if (count === null || page === null || counted?.status !== "ok" || paged?.status !== "ok") return null;
  const list = withPage(emptyPages(counted.data), { end: "top", i: 0 }, paged.data.jobs, paged.data.next, 0);
  [count, page, counted, paged] = [null, null, null, null];
  return list;
}

/**
 * The opening count if it has not been taken and this filter narrows nothing, else null. Any
 * other count means the list starts over, so the opening page, if still there, is dropped.
 */
export function takeOpeningCount(filter: BulkFilter | null): Count | null {
  const taken = narrows(filter) ? null : count;
  [count, counted] = [null, null];
  if (taken === null) [page, paged] = [null, null];
  return taken;
}

/**
 * The opening page if it has not been taken, the opening count was the last count asked for,
 * and these are its arguments; else null.
 */
export function takeOpeningPage(filter: BulkFilter | null, after: string | null, limit: number, oldestFirst: boolean): Page | null {
  const same = !narrows(filter) && after === null && limit === PAGE && !oldestFirst;
  if (page === null || !same) return null;
  const taken = page;
  [page, paged] = [null, null];
  return taken;
}

/** Drops the opening reads: they failed (no ledger was open), and the list reads afresh. */
export function forgetOpening(): void {
  [count, page, counted, paged] = [null, null, null, null];
}
