// The ledger's status as the backend reports it: open, open but unreachable since a time, or
// not open and why. Read once when the window starts, then kept from the backend's events.
import { useEffect, useState } from "react";

import { call, useBackendEvent } from "./api";
import { commands, events, type LedgerStatus, type Primary } from "./bindings";
import { forgetOpening } from "./opening";

/** The status, null until the first answer. */
export function useLedgerStatus(): LedgerStatus | null {
  const [status, setStatus] = useState<LedgerStatus | null>(null);
  useEffect(() => {
    let current = true;
    void call(() => commands.ledgerStatus()).then((result) => {
      // An event that arrived first is newer than this answer.
      if (current && result.status === "ok") setStatus((s) => s ?? result.data);
    });
    return () => {
      current = false;
    };
  }, []);
  useBackendEvent(events.ledgerStatus, setStatus);
  // The Jobs screen's opening reads failed with no ledger open: it reads afresh once one is.
  useEffect(() => {
    if (status?.state.is === "not_open") forgetOpening();
  }, [status]);
  return status;
}

/** "15:02:11": the local time of an RFC 3339 time, for "since …". */
export function clock(iso: string): string {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? iso : new Date(at).toLocaleTimeString();
}

/**
 * "The ledger's primary is now 127.0.0.1:5433, since 10:02:11": where a PostgreSQL ledger is
 * written to once it moved after a failover; null before it moved, and on a file.
 */
export function primaryMoved(primary: Primary | null): string | null {
  if (primary === null || primary.since === null) return null;
  return `The ledger's primary is now ${primary.host}, since ${clock(primary.since)}`;
}
