// The onejob window: a bar with the screens and the "needs attention" count, and one screen.
import { lazy, Suspense, useCallback, useState } from "react";

import { LedgerContext, useBackendEvent, useLedgerEvents, useNow, useRead } from "./api";
import { commands, events } from "./bindings";
import { JobsScreen } from "./screens/JobsScreen";

// The first screen is in the bundle the window starts with; the others load on their first
// visit, so a start parses and keeps only what the Jobs screen needs.
const JobScreen = lazy(() => import("./screens/JobScreen").then((m) => ({ default: m.JobScreen })));
const ProvidersScreen = lazy(() => import("./screens/ProvidersScreen").then((m) => ({ default: m.ProvidersScreen })));
const SettingsScreen = lazy(() => import("./screens/SettingsScreen").then((m) => ({ default: m.SettingsScreen })));
const SubmitScreen = lazy(() => import("./screens/SubmitScreen").then((m) => ({ default: m.SubmitScreen })));

type Screen = { name: "jobs" | "submit" | "providers" | "settings" } | { name: "job"; id: string };

const TABS = [
  { name: "jobs", label: "Jobs" },
  { name: "submit", label: "Submit" },
  { name: "providers", label: "Providers" },
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
  const go = (name: "jobs" | "submit" | "providers" | "settings") => setScreen({ name });

  // The backend asks to show a job: the one its last attention notification named.
  const openJob = useCallback((payload: { id: string }) => setScreen({ name: "job", id: payload.id }), []);
  useBackendEvent(events.openJob, openJob);

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
      <main className="content">
        <Suspense fallback={null}>
          {screen.name === "jobs" && <JobsScreen now={now} open={open} go={go} />}
          {screen.name === "submit" && <SubmitScreen open={open} />}
          {screen.name === "providers" && <ProvidersScreen />}
          {screen.name === "settings" && <SettingsScreen />}
          {screen.name === "job" && <JobScreen id={screen.id} now={now} back={() => go("jobs")} />}
        </Suspense>
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
