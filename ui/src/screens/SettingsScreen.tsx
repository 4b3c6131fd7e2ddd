// The Settings screen: which ledger the app uses (a file, or a PostgreSQL database shared by a
// team, and which of its hosts is written to), what weakens the promise on it (as `onejob
// doctor` names it), whom it acts for, and how many attempts it sends at once.
import { useState } from "react";
import { call, useRead } from "../api";
import { commands, type LedgerStatus, type Primary, type Risk, type Settings, type Source } from "../bindings";
import { CopyId } from "../components/CopyId";
import { ErrorBanner } from "../components/ErrorBanner";
import type { Shown } from "../errors";
import { primaryMoved } from "../ledgerStatus";

const SOURCE: Record<Source, string> = {
  environment: "named by ONEJOB_DB",
  settings: "chosen here",
  default: "the default file",
};

/** `ledger`: the ledger's status as the window keeps it, for the host written to now. */
export function SettingsScreen({ ledger = null }: { ledger?: LedgerStatus | null }) {
  const read = useRead(() => commands.settings(), []);
  const [saved, setSaved] = useState<Settings | null>(null);
  const settings = saved ?? read.data;
  return (
    <section className="screen settings" aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      {read.error !== null && <ErrorBanner error={read.error} />}
      {settings?.open === false && (
        <p className="ledger-closed" role="status" data-testid="ledger-closed">
          No ledger is open: the one below could not be opened (the Jobs screen says why). A ledger
          chosen here is checked and opened at once.
        </p>
      )}
      {settings !== null && (
        <dl className="facts">
          <dt>Ledger</dt>
          <dd>
            <CopyId value={settings.db_path} full testId="db-path" />{" "}
            <span className="muted" data-testid="ledger-kind">
              {settings.shared ? "PostgreSQL, shared" : "SQLite file"} · {SOURCE[settings.source]}
            </span>
          </dd>
          {ledger !== null && ledger.primary !== null && <PrimaryRow primary={ledger.primary} />}
          {settings.next_start !== null && (
            <>
              <dt>From the next start</dt>
              <dd>
                <code data-testid="ledger-next">{settings.next_start}</code>
              </dd>
            </>
          )}
          <dt>Profile (owner)</dt>
          <dd>
            <code>{settings.owner}</code>
          </dd>
        </dl>
      )}
      {settings?.open === true && <LedgerRisks />}
      <p className="muted">
        The <code>onejob</code> command line uses the same file by default, so jobs it submits
        appear here as they happen.
      </p>
      {settings !== null && (
        <SendingForm current={settings.concurrency} onSaved={setSaved} />
      )}
      <LedgerForm onSaved={setSaved} />
    </section>
  );
}

/**
 * What weakens the promise on the ledger in use, each with why and what to do: a server whose
 * standbys are none synchronous (a failover could lose acknowledged jobs and send attempts
 * twice), a clock far from the server's, and the like. Nothing when none is named.
 */
function LedgerRisks() {
  const risks = useRead(() => commands.ledgerRisks(), []);
  if (risks.error !== null) return <ErrorBanner error={risks.error} />;
  if (risks.data === null || risks.data.length === 0) return null;
  return (
    <div className="ledger-risks" role="alert" data-testid="ledger-risks">
      <h3>A risk on this ledger</h3>
      <ul>
        {risks.data.map((risk: Risk) => (
          <li key={risk.code} data-testid="ledger-risk" data-code={risk.code}>
            <strong>{risk.what}</strong> {risk.why} <em>What to do:</em> {risk.what_to_do}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** The host a PostgreSQL ledger is written to, and, after a failover, that it moved and when. */
function PrimaryRow({ primary }: { primary: Primary }) {
  const moved = primaryMoved(primary);
  return (
    <>
      <dt>Connected to</dt>
      <dd>
        <code data-testid="ledger-primary">{primary.host}</code>{" "}
        <span className="muted" data-testid="ledger-primary-note">
          {moved === null ? "its primary, where onejob writes" : `${moved}, after a failover`}
        </span>
      </dd>
    </>
  );
}

/**
 * Saves a ledger choice (checked by the backend), with what the form shows meanwhile: once
 * saved, whether it is in use now (no ledger was open) or from the next start.
 */
function useChooseLedger(onSaved: (s: Settings) => void) {
  const [error, setError] = useState<Shown | null>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<"now" | "next-start" | null>(null);

  async function choose(text: string) {
    setBusy(true);
    setDone(null);
    const result = await call(() => commands.chooseLedger(text));
    setBusy(false);
    if (result.status === "ok") {
      setError(null);
      setDone(result.data.open && result.data.next_start === null ? "now" : "next-start");
      onSaved(result.data);
    } else {
      setError(result.error);
    }
  }

  return { error, busy, done, choose };
}

/** Chooses the ledger the app opens from its next start. */
function LedgerForm({ onSaved }: { onSaved: (s: Settings) => void }) {
  const [location, setLocation] = useState("");
  const { error, busy, done, choose: save } = useChooseLedger(onSaved);

  return (
    <form
      className="ledger-form"
      onSubmit={(e) => {
        e.preventDefault();
        void save(location);
      }}
    >
      <h3>Use another ledger</h3>
      <p className="muted">
        A file path keeps an embedded ledger on this computer. A URL such as{" "}
        <code>postgres://alice@db.example/onejob</code> shares one ledger with a team: every app and
        worker pointed at it sends each attempt once. The password goes in{" "}
        <code>~/.pgpass</code> (or <code>PGPASSWORD</code>), never in the URL. A path may begin with{" "}
        <code>~</code> for your home folder; it is saved as its full path. The ledger is checked now
        and used from the next start, or at once when no ledger is open.
      </p>
      <label>
        File or PostgreSQL URL
        <input
          data-testid="ledger-location"
          value={location}
          onChange={(e) => setLocation(e.target.value)}
          spellCheck={false}
          autoComplete="off"
        />
      </label>
      {error !== null && (
        <p className="field-error" role="alert" data-testid="ledger-error">
          {error.message}
        </p>
      )}
      {done !== null && (
        <p className="muted" data-testid="ledger-saved">
          {done === "now" ? "Saved, and in use now." : "Saved. Restart onejob to use it."}
        </p>
      )}
      <div className="actions">
        <button type="submit" className="button primary" disabled={busy || location.trim() === ""}>
          Check and save
        </button>
        <button type="button" className="button" disabled={busy} onClick={() => void save("")}>
          Back to the default file
        </button>
      </div>
    </form>
  );
}

/** The most attempts the app sends at once, as for `onejob worker --concurrency`. */
const MAX_CONCURRENCY = 1024;

/** Sets how many attempts the app's executor sends at once; applied at once and kept. */
function SendingForm({ current, onSaved }: { current: number; onSaved: (s: Settings) => void }) {
  const [text, setText] = useState(String(current));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);

  async function save() {
    const n = Number(text.trim());
    if (!Number.isInteger(n) || n < 1 || n > MAX_CONCURRENCY) {
      setError(`Give a whole number from 1 to ${MAX_CONCURRENCY}.`);
      setDone(false);
      return;
    }
    setBusy(true);
    const result = await call(() => commands.setConcurrency(n));
    setBusy(false);
    if (result.status === "ok") {
      setError(null);
      setDone(true);
      onSaved(result.data);
    } else {
      setError(result.error.message);
      setDone(false);
    }
  }

  return (
    <form
      className="sending-form"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <h3>Attempts sent at once</h3>
      <p className="muted">
        How many attempts this app sends to providers at the same time. More finishes a long queue
        sooner; fewer is gentler on a provider&apos;s rate limits. Lowering it lets attempts already
        out finish; nothing is sent twice either way.
      </p>
      <label>
        At once (1 to {MAX_CONCURRENCY})
        <input
          data-testid="concurrency"
          type="number"
          min={1}
          max={MAX_CONCURRENCY}
          step={1}
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            setDone(false);
          }}
        />
      </label>
      {error !== null && (
        <p className="field-error" role="alert" data-testid="concurrency-error">
          {error}
        </p>
      )}
      {done && (
        <p className="muted" data-testid="concurrency-saved">
          Saved and applied now.
        </p>
      )}
      <div className="actions">
        <button type="submit" className="button primary" disabled={busy}>
          Save
        </button>
      </div>
    </form>
  );
}
