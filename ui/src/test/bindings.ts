// The bindings as the component tests stand them in: a screen's commands, each a mock, for the
// tests of that screen to share. `vi.mock` is hoisted above the imports, so a test names one
// here from inside its factory:
//
//   vi.mock("../bindings", async () => (await import("../test/bindings")).jobScreen());
import { vi } from "vitest";

/** What the first paint resolves to: nothing, at once. */
const painted = () => vi.fn(() => Promise.resolve());

/** The Job screen's commands. */
export function jobScreen() {
  return { commands: { job: vi.fn(), jobPart: vi.fn(), saveJobPart: vi.fn(), jobPaint: painted() } };
}

/** The Jobs list's commands. */
export function jobsScreen() {
  return { commands: { listJobs: vi.fn(), countJobs: vi.fn(), providers: vi.fn(), firstPaint: painted() } };
}

/** What a list resolves to until a test says otherwise: nothing. */
const none = () => vi.fn(() => Promise.resolve({ status: "ok", data: [] }));

/** The Spend screen's commands, its budgets' among them. */
export function spendScreen() {
  return { commands: { spend: vi.fn(), budgets: none(), setBudget: vi.fn(), removeBudget: vi.fn(), providers: none() } };
}

/** The Settings screen's commands. */
export function settingsScreen() {
  return { commands: { settings: vi.fn(), setConcurrency: vi.fn(), chooseLedger: vi.fn(), ledgerRisks: none() } };
}
