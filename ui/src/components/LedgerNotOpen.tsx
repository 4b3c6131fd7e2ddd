// What the window shows when its ledger is not open, stopped answering or moved: which ledger,
// what failed, what to check, and what can be done (try again, use another ledger, and for a
// file that is not a database, move it aside and start a new ledger); and after a failover,
// which host it is written to now.
import { useState } from "react";

import { call } from "../api";
import { commands, type LedgerStatus, type MovedAside, type Problem } from "../bindings";
import type { Shown } from "../errors";
import { clock } from "../ledgerStatus";

/** A status whose ledger is not open. */
export type NotOpenStatus = LedgerStatus & { state: { is: "not_open" } };

const TITLE: Record<Problem, string> = {
  missing: "The ledger is missing",
  not_a_database: "The ledger file is not a database",
  unreachable: "The ledger's server does not answer",
  failed: "The ledger could not be opened",
};

/** What to check, for each reason a ledger is not open. */
function advice(problem: Problem, shared: boolean) {
  switch (problem) {
    case "missing":
      return (
        <>
          The file chosen in Settings is not there: was its drive unmounted, or the file moved?
          onejob did not make a new, empty ledger in its place. Mount the drive and try again,
          create a new ledger there, or use another ledger.
        </>
      );
    case "not_a_database":
      return (
        <>
          The file is there, but it is not a onejob ledger (not a SQLite database): was another
          file saved under this name, or was it damaged? onejob has not changed it. Check the
          path, or move it aside (it is kept beside, renamed, never deleted) and start a new,
          empty ledger here.
        </>
      );
    case "unreachable":
      return (
        <>
          Check that the PostgreSQL server is running, that this computer can reach it (network,
          VPN, firewall), and the host and port in the URL. onejob tries again by itself every few
          seconds and continues as soon as the server answers.
        </>
      );
    case "failed":
      return shared ? (
        <>
          Check the user and database in the URL, the password in <code>~/.pgpass</code> (or{" "}
          <code>PGPASSWORD</code>), and the role&apos;s rights; then try again, or use another
          ledger.
        </>
      ) : (
        <>Check what the message says (the file&apos;s permissions, free disk space); then try again, or use another ledger.</>
      );
  }
}

/** The whole screen while no ledger is open. */
export function LedgerNotOpen({
  status,
  onSettings,
  onMoved,
}: {
  status: NotOpenStatus;
  onSettings: () => void;
  onMoved: (moved: MovedAside) => void;
}) {
  const { problem, message, since, retrying } = status.state;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Shown | null>(null);
  const [tried, setTried] = useState(false);

  async function tryAgain() {
    setBusy(true);
    const result = await call(() => commands.tryLedgerAgain());
    setBusy(false);
    setTried(true);
    setError(result.status === "error" ? result.error : null);
  }

  async function moveAside() {
    setBusy(true);
    const result = await call(() => commands.moveLedgerAside());
    setBusy(false);
    if (result.status === "ok") {
      setError(null);
      onMoved(result.data);
    } else {
      setError(result.error);
    }
  }

  async function createThere() {
    setBusy(true);
    const result = await call(() => commands.chooseLedger(status.location));
    setBusy(false);
    setError(result.status === "error" ? result.error : null);
  }

  return (
    <section className="screen ledger-not-open" role="alert" data-testid="ledger-not-open" data-problem={problem}>
      <h2>{TITLE[problem]}</h2>
      <dl className="facts">
        <dt>Ledger</dt>
        <dd>
          <code data-testid="ledger-not-open-location">{status.location}</code>
        </dd>
        <dt>What failed</dt>
        <dd data-testid="ledger-not-open-message">{message}</dd>
        <dt>Since</dt>
        <dd>{clock(since)}</dd>
      </dl>
      <p data-testid="ledger-not-open-advice">{advice(problem, status.shared)}</p>
      {retrying && (
        <p className="muted" data-testid="ledger-retrying">
          Trying again in the background…
        </p>
      )}
      {tried && error === null && (
        <p className="muted" data-testid="ledger-tried">
          Tried again: it still could not be opened.
        </p>
      )}
      {error !== null && (
        <p className="field-error" data-testid="ledger-not-open-error">
          {error.message}
        </p>
      )}
      <div className="actions">
        <button type="button" className="button primary" disabled={busy} onClick={() => void tryAgain()} data-testid="ledger-try-again">
          Try again
        </button>
        {problem === "not_a_database" && (
          <button type="button" className="button" disabled={busy} onClick={() => void moveAside()} data-testid="ledger-move-aside">
            Move it aside and start a new ledger
          </button>
        )}
        {problem === "missing" && (
          <button type="button" className="button" disabled={busy} onClick={() => void createThere()} data-testid="ledger-create-there">
            Create a new ledger there
          </button>
        )}
        <button type="button" className="button" onClick={onSettings} data-testid="ledger-use-another">
          Use another ledger
        </button>
      </div>
    </section>
  );
}

/** The banner while the open ledger does not answer; it goes once the ledger answers again. */
export function LedgerUnreachable({ location, since, message }: { location: string; since: string; message: string }) {
  return (
    <div className="ledger-unreachable" role="alert" data-testid="ledger-unreachable" title={message}>
      The ledger at <code>{location}</code> is unreachable since {clock(since)}, retrying. What you do meanwhile is not
      saved, and says so; the window catches up by itself once it answers.
    </div>
  );
}

/**
 * The banner once a PostgreSQL ledger's primary moved after a failover (`text`, from
 * `primaryMoved`): it stays until dismissed.
 */
export function PrimaryMoved({ text, onClose }: { text: string; onClose: () => void }) {
  return (
    <div className="ledger-primary-moved" role="status" data-testid="ledger-primary-moved">
      <span data-testid="ledger-primary-moved-text">{text}</span>. The server it was written to before stopped
      answering and a standby took over: onejob found the new primary by itself, and writes there.{" "}
      <button type="button" className="button" onClick={onClose} data-testid="ledger-primary-moved-dismiss">
        Dismiss
      </button>
    </div>
  );
}

/** Where an unreadable ledger file was kept, once a new ledger took its place. */
export function MovedNotice({ moved, onClose }: { moved: MovedAside; onClose: () => void }) {
  return (
    <div className="ledger-moved" role="status" data-testid="ledger-moved">
      The unreadable file was kept as <code data-testid="ledger-kept">{moved.kept}</code>; a new, empty ledger is at{" "}
      <code>{moved.location}</code>.{" "}
      <button type="button" className="button" onClick={onClose}>
        OK
      </button>
    </div>
  );
}
