// The jobs list and the attention count, loaded through the generated commands.
import { useCallback, useEffect, useRef, useState } from "react";

import { commands, type Job, type JobStatus } from "./bindings";
import { shown, type Shown } from "./errors";

/** What a generated command resolves to. */
type Result<T, E> = { status: "ok"; data: T } | { status: "error"; error: E };

/** Rows asked for per page; the engine's default page size. */
const PAGE = 50;

/** Runs a command, turning a thrown failure (no IPC, a broken bridge) into an error result. */
async function call<T>(run: () => Promise<Result<T, unknown>>): Promise<Result<T, Shown>> {
  try {
    const result = await run();
    return result.status === "ok" ? result : { status: "error", error: shown(result.error) };
  } catch (thrown: unknown) {
    return { status: "error", error: shown(thrown) };
  }
}

/** The loaded rows of one status filter, and how to continue or restart them. */
export interface JobList {
  jobs: Job[];
  /** The cursor of the next page; null once the last page is loaded. */
  next: string | null;
  loading: boolean;
  error: Shown | null;
  loadMore: () => void;
  reload: () => void;
}

interface ListState {
  jobs: Job[];
  next: string | null;
  loading: boolean;
  error: Shown | null;
}

/** Jobs of one status (all when null), newest first, fetched a page at a time by cursor. */
export function useJobs(status: JobStatus | null): JobList {
  const [state, setState] = useState<ListState>({
    jobs: [],
    next: null,
    loading: true,
    error: null,
  });
  // Only the latest request may write, so a slow answer for an old filter is ignored.
  const latest = useRef(0);

  const load = useCallback(
    async (after: string | null) => {
      const request = ++latest.current;
      setState((s) => ({ ...s, loading: true, error: null }));
      const result = await call(() => commands.listJobs(status, after, PAGE));
      if (request !== latest.current) return;
      if (result.status === "ok") {
        const page = result.data;
        setState((s) => ({
          jobs: after === null ? page.jobs : [...s.jobs, ...page.jobs],
          next: page.next,
          loading: false,
          error: null,
        }));
      } else {
        setState((s) => ({ ...s, loading: false, error: result.error }));
      }
    },
    [status],
  );

  useEffect(() => {
    setState({ jobs: [], next: null, loading: true, error: null });
    void load(null);
  }, [load]);

  const { next } = state;
  const loadMore = useCallback(() => {
    if (next !== null) void load(next);
  }, [load, next]);
  const reload = useCallback(() => void load(null), [load]);

  return { ...state, loadMore, reload };
}

/** How many jobs need a person, or the error that kept it from being counted. */
export interface Attention {
  count: number | null;
  error: Shown | null;
  reload: () => void;
}

/** The "needs attention" count: `unknown` jobs and late answers flagged for review. */
export function useNeedsAttention(): Attention {
  const [count, setCount] = useState<number | null>(null);
  const [error, setError] = useState<Shown | null>(null);

  const reload = useCallback(() => {
    void call(() => commands.needsAttention()).then((result) => {
      if (result.status === "ok") {
        setCount(result.data);
        setError(null);
      } else {
        setError(result.error);
      }
    });
  }, []);

  useEffect(reload, [reload]);
  return { count, error, reload };
}

/** The current time, refreshed every `everyMs`, so relative times stay true. */
export function useNow(everyMs: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), everyMs);
    return () => window.clearInterval(timer);
  }, [everyMs]);
  return now;
}
