// The onejob window: a bar with the screens and the "needs attention" count, and one screen.
import { lazy, Suspense, useCallback, useEffect, useRef, useState } from "react";

import { LedgerContext, useBackendEvent, useLedger, useLedgerEvents, useNow, useRead } from "./api";
import { commands, events, type JobStatus, type LedgerStatus, type MovedAside } from "./bindings";
import { LedgerNotOpen, LedgerUnreachable, MovedNotice, PrimaryMoved, type NotOpenStatus } from "./components/LedgerNotOpen";
import { primaryMoved, useLedgerStatus } from "./ledgerStatus";
import { JobsScreen } from "./screens/JobsScreen";

// The first screen is in the bundle the window starts with; the others load on their first
// visit, so a start parses and keeps only what the Jobs screen needs.
const JobScreen = lazy(() => import("./screens/JobScreen").then((m) => ({ default: m.JobScreen })));
const ProvidersScreen = lazy(() => import("./screens/ProvidersScreen").then((m) => ({ default: m.ProvidersScreen })));
const SpendScreen = lazy(() => import("./screens/SpendScreen").then((m) => ({ default: m.SpendScreen })));
const SettingsScreen = lazy(() => import("./screens/SettingsScreen").then((m) => ({ default: m.SettingsScreen })));
const SubmitScreen = lazy(() => import("./screens/SubmitScreen").then((m) => ({ default: m.SubmitScreen })));

type Tab = "jobs" | "submit" | "providers" | "spend" | "settings";
/** A screen; the Jobs list may open filtered to one status. */
type Screen = { name: Tab; status?: JobStatus } | { name: "job"; id: string };

const TABS = [
  { name: "jobs", label: "Jobs" },
  { name: "submit", label: "Submit" },
  { name: "providers", label: "Providers" },
  { name: "spend", label: "Spend" },
  { name: "settings", label: "Settings" },
] as const;

export function App() {
  const ledger = useLedgerEvents();
  return (
    <LedgerContext.Provider value={ledger}>
      <Window />
    </LedgerContext.Provider>
  );
}

function Window() {
  const [screen, setScreen] = useState<Screen>({ name: "jobs" });
  // One clock for relative times and the live clocks of open attempts: display, not data.
  const now = useNow(1000);
  const open = (id: string) => setScreen({ name: "job", id });
  const go = (name: Tab) => setScreen({ name });

  // The backend asks to show a job: the one its last attention notification named.
  const openJob = useCallback((payload: { id: string }) => setScreen({ name: "job", id: payload.id }), []);
  useBackendEvent(events.openJob, openJob);

  const status = useLedgerStatus();
  const [moved, setMoved] = useState<MovedAside | null>(null);
  // After a failover, until the person dismisses it (a later failover is said again).
  const primary = primaryMoved(status?.primary ?? null);
  const [dismissed, setDismissed] = useState<string | null>(null);
  const notOpen = isNotOpen(status) ? status : null;
  // Whatever the window shows is read again once the ledger opens or answers again.
  const { changed } = useLedger();
  const state = status?.state.is;
  const was = useRef(state);
  useEffect(() => {
    if (state === "open" && was.current !== undefined && was.current !== "open") changed();
    was.current = state;
  }, [state, changed]);

  return (
    <div className="app">
      <header className="topbar">
        <h1 className="title">onejob</h1>
        <nav className="tabs" aria-label="Screens">
          {TABS.map((t) => (
            <button
              key={t.name}
              type="button"
              className="tab"
              aria-current={screen.name === t.name || (t.name === "jobs" && screen.name === "job") ? "page" : undefined}
              data-screen={t.name}
              onClick={() => go(t.name)}
            >
              {t.label}
            </button>
          ))}
        </nav>
        <span className="spacer" />
        <Attention onOpen={() => go("jobs")} />
      </header>
      {status?.state.is === "unreachable" && (
        <LedgerUnreachable location={status.location} since={status.state.since} message={status.state.message} />
      )}
      {primary !== null && primary !== dismissed && <PrimaryMoved text={primary} onClose={() => setDismissed(primary)} />}
      {moved !== null && <MovedNotice moved={moved} onClose={() => setMoved(null)} />}
      <main className="content">
        {notOpen !== null && screen.name !== "settings" ? (
          <LedgerNotOpen status={notOpen} onSettings={() => go("settings")} onMoved={setMoved} />
        ) : (
          <Suspense fallback={null}>
            {screen.name === "jobs" && <JobsScreen now={now} open={open} go={go} status={screen.status} />}
            {screen.name === "submit" && <SubmitScreen open={open} />}
            {screen.name === "providers" && <ProvidersScreen />}
            {screen.name === "spend" && <SpendScreen showUnknown={() => setScreen({ name: "jobs", status: "unknown" })} />}
            {screen.name === "settings" && <SettingsScreen ledger={status} />}
            {screen.name === "job" && <JobScreen id={screen.id} now={now} back={() => go("jobs")} />}
          </Suspense>
        )}
      </main>
    </div>
  );
}

function Attention({ onOpen }: { onOpen: () => void }) {
  const count = useRead(() => commands.needsAttention(), []);
  const n = count.data ?? 0;
  return (
    <button
      type="button"
      className={n > 0 ? "attention attention-some" : "attention"}
      title="Jobs whose outcome is unknown, and late answers flagged for review"
      onClick={onOpen}
      data-testid="needs-attention"
      data-count={count.data ?? ""}
    >
      needs attention <strong>{count.data ?? "–"}</strong>
    </button>
  );
}

function isNotOpen(status: LedgerStatus | null): status is NotOpenStatus {
  return status?.state.is === "not_open";
}
