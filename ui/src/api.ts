// Calls the generated commands and keeps the screens in step with the ledger: every screen
// re-reads what it shows when the backend announces a change, never on a timer.
import { createContext, useCallback, useContext, useEffect, useState } from "react";

import { events } from "./bindings";
import { shown, type Shown } from "./errors";

/** What a generated command resolves to. */
export type Result<T, E> = { status: "ok"; data: T } | { status: "error"; error: E };

/** Runs a command, turning a thrown failure (no IPC, a broken bridge) into an error result. */
export async function call<T>(run: () => Promise<Result<T, unknown>>): Promise<Result<T, Shown>> {
  try {
    const result = await run();
    return result.status === "ok" ? result : { status: "error", error: shown(result.error) };
  } catch (thrown: unknown) {
    return { status: "error", error: shown(thrown) };
  }
}

/** How many ledger changes the window has heard of, and how to count one it made itself. */
export interface Ledger {
  seq: number;
  changed: () => void;
}

export const LedgerContext = createContext<Ledger>({ seq: 0, changed: () => undefined });

/** A generated event the window can listen to. */
interface BackendEvent<T> {
  listen: (handler: (e: { payload: T }) => void) => Promise<() => void>;
}

/** Calls `handler` for each of the backend's `event` while the component is mounted. */
export function useBackendEvent<T>(event: BackendEvent<T>, handler: (payload: T) => void): void {
  useEffect(() => {
    let stop: (() => void) | null = null;
    let gone = false;
    event
      .listen((e) => handler(e.payload))
      .then((unlisten) => {
        if (gone) unlisten();
        else stop = unlisten;
      })
      .catch(() => undefined);
    return () => {
      gone = true;
      stop?.();
    };
  }, [event, handler]);
}

/** The ledger's change counter, fed by the backend's `ledger-changed` event. */
export function useLedgerEvents(): Ledger {
  const [seq, setSeq] = useState(0);
  const changed = useCallback(() => setSeq((n) => n + 1), []);
  useBackendEvent(events.ledgerChanged, changed);
  return { seq, changed };
}

/** The ledger the window is showing. */
export function useLedger(): Ledger {
  return useContext(LedgerContext);
}

/** The answer of a read, re-run whenever the ledger changes or `deps` do. */
export function useRead<T>(
  read: () => Promise<Result<T, unknown>>,
  deps: readonly unknown[],
): { data: T | null; error: Shown | null; loading: boolean } {
  const { seq } = useLedger();
  const [state, setState] = useState<{ data: T | null; error: Shown | null; loading: boolean }>({
    data: null,
    error: null,
    loading: true,
  });
  useEffect(() => {
    let current = true;
    void call(read).then((result) => {
      if (!current) return;
      setState(
        result.status === "ok"
          ? { data: result.data, error: null, loading: false }
          : (s) => ({ ...s, error: result.error, loading: false }),
      );
    });
    return () => {
      current = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [seq, ...deps]);
  return state;
}

/** The current time, refreshed every `everyMs`: for clocks and relative times, not data. */
export function useNow(everyMs: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), everyMs);
    return () => window.clearInterval(timer);
  }, [everyMs]);
  return now;
}
