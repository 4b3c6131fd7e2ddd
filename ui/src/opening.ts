// The Jobs screen's first two reads, the count of every job and the newest page, asked for
// together as soon as the window's script runs, instead of one after the other once React has
// rendered and run its effects. The Jobs screen takes each once, when it asks for exactly that
// read; every later read, and any other filter, goes to the ledger as before.
import { commands } from "./bindings";
import { PAGE } from "./pager";

type Count = ReturnType<typeof commands.countJobs>;
type Page = ReturnType<typeof commands.listJobs>;

let count: Count | null = null;
let page: Page | null = null;

/** Asks for the unfiltered count and the newest page. main.tsx calls it before rendering. */
export function startOpening(): void {
  count = commands.countJobs(null, null, null);
  page = commands.listJobs(null, null, PAGE, false, null, null);
  // A read nobody takes (the window closed first) must not be reported as unhandled; whoever
  // takes one still sees its failure.
  count.catch(() => undefined);
  page.catch(() => undefined);
}

/**
 * The opening count if it has not been taken and these are its arguments, else null. Any
 * other count means the list starts over, so the opening page, if still there, is dropped.
 */
export function takeOpeningCount(status: unknown, search: unknown, provider: unknown): Count | null {
  const taken = status === null && search === null && provider === null ? count : null;
  count = null;
  if (taken === null) page = null;
  return taken;
}

/**
 * The opening page if it has not been taken, the opening count was the last count asked for,
 * and these are its arguments; else null.
 */
export function takeOpeningPage(
  status: unknown,
  after: unknown,
  limit: number,
  oldestFirst: boolean,
  search: unknown,
  provider: unknown,
): Page | null {
  const same =
    status === null && after === null && limit === PAGE && !oldestFirst && search === null && provider === null;
  if (page === null || !same) return null;
  const taken = page;
  page = null;
  return taken;
}
