// The window's ledger states: a ledger that could not be opened is explained with what can be
// done, in place of the screens; an open ledger that stops answering gets a banner that goes
// once it answers again; and the window continues by itself when the ledger opens.
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";

import { App } from "./App";
import { commands, type LedgerStatus, type MovedAside } from "./bindings";
import { LedgerNotOpen, LedgerUnreachable, type NotOpenStatus } from "./components/LedgerNotOpen";
import { stubResizeObserver } from "./test/dom";

/** The handlers the window registered for each backend event, by event. */
const listeners = vi.hoisted(() => new Map<string, (e: { payload: unknown }) => void>());

vi.mock("./bindings", () => {
  const event = (name: string) => ({
    listen: (handler: (e: { payload: unknown }) => void) => {
      listeners.set(name, handler);
      return Promise.resolve(() => listeners.delete(name));
    },
  });
  return {
    commands: {
      ledgerStatus: vi.fn(),
      tryLedgerAgain: vi.fn(),
      moveLedgerAside: vi.fn(),
      chooseLedger: vi.fn(),
      countJobs: vi.fn(),
      listJobs: vi.fn(),
      providers: vi.fn(),
      needsAttention: vi.fn(),
      firstPaint: vi.fn(() => Promise.resolve()),
    },
    events: { ledgerChanged: event("ledgerChanged"), openJob: event("openJob"), ledgerStatus: event("ledgerStatus") },
  };
});

const SINCE = "2026-03-01T15:02:11+01:00";

function notOpen(problem: NotOpenStatus["state"]["problem"], location = "/home/ada/team.db"): NotOpenStatus {
  return {
    location,
    shared: location.startsWith("postgres://"),
    state: { is: "not_open", problem, since: SINCE, message: "database: file is not a database", retrying: problem === "unreachable" },
  };
}

const open: LedgerStatus = { location: "postgres://ada@db.example/team", shared: true, state: { is: "open" } };

beforeAll(() => {
  stubResizeObserver();
  vi.mocked(commands.providers).mockResolvedValue({ status: "ok", data: [] });
  vi.mocked(commands.needsAttention).mockResolvedValue({ status: "ok", data: 0 });
  vi.mocked(commands.countJobs).mockResolvedValue({ status: "ok", data: 0 });
  vi.mocked(commands.listJobs).mockResolvedValue({ status: "ok", data: { jobs: [], next: null } });
});

afterEach(() => {
  cleanup();
  vi.mocked(commands.tryLedgerAgain).mockReset();
  vi.mocked(commands.moveLedgerAside).mockReset();
  vi.mocked(commands.chooseLedger).mockReset();
});

async function panel(status: NotOpenStatus, onMoved = vi.fn(), onSettings = vi.fn()) {
  await act(async () => {
    render(<LedgerNotOpen status={status} onSettings={onSettings} onMoved={onMoved} />);
  });
  return { onMoved, onSettings };
}

describe("a ledger that could not be opened", () => {
  it("says which file, what failed and what to check, and moves it aside only when asked", async () => {
    const { onMoved, onSettings } = await panel(notOpen("not_a_database"));
    const shown = screen.getByTestId("ledger-not-open");
    expect(shown.textContent).toContain("not a database");
    expect(screen.getByTestId("ledger-not-open-location").textContent).toBe("/home/ada/team.db");
    expect(screen.getByTestId("ledger-not-open-message").textContent).toBe("database: file is not a database");
    expect(screen.getByTestId("ledger-not-open-advice").textContent).toContain("has not changed it");
    expect(screen.queryByTestId("ledger-retrying")).toBeNull();
    expect(commands.moveLedgerAside).not.toHaveBeenCalled();

    const moved: MovedAside = {
      kept: "/home/ada/team.db.unreadable-20260301-150211",
      location: "/home/ada/team.db",
      status: { location: "/home/ada/team.db", shared: false, state: { is: "open" } },
    };
    vi.mocked(commands.moveLedgerAside).mockResolvedValue({ status: "ok", data: moved });
    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: "Move it aside and start a new ledger" }));
    });
    expect(commands.moveLedgerAside).toHaveBeenCalledTimes(1);
    expect(onMoved).toHaveBeenCalledWith(moved);

    fireEvent.click(screen.getByRole("button", { name: "Use another ledger" }));
    expect(onSettings).toHaveBeenCalled();
  });

  it("says a server that does not answer is tried again, and offers no moving aside", async () => {
    await panel(notOpen("unreachable", "postgres://ada@db.example/team"));
    expect(screen.getByTestId("ledger-not-open").textContent).toContain("does not answer");
    expect(screen.getByTestId("ledger-not-open-advice").textContent).toContain("Check that the PostgreSQL server is running");
    expect(screen.getByTestId("ledger-retrying")).toBeTruthy();
    expect(screen.queryByRole("button", { name: "Move it aside and start a new ledger" })).toBeNull();

    vi.mocked(commands.tryLedgerAgain).mockResolvedValue({ status: "ok", data: notOpen("unreachable") });
    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: "Try again" }));
    });
    expect(commands.tryLedgerAgain).toHaveBeenCalledTimes(1);
    expect(screen.getByTestId("ledger-tried").textContent).toContain("still could not be opened");
  });

  it("offers to create a missing file anew, and makes nothing until asked", async () => {
    await panel(notOpen("missing", "/media/usb/team.db"));
    expect(screen.getByTestId("ledger-not-open").textContent).toContain("The ledger is missing");
    expect(commands.chooseLedger).not.toHaveBeenCalled();
    vi.mocked(commands.chooseLedger).mockResolvedValue({
      status: "ok",
      data: { db_path: "/media/usb/team.db", open: true, shared: false, source: "settings", next_start: null, owner: "local", concurrency: 32 },
    });
    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: "Create a new ledger there" }));
    });
    expect(commands.chooseLedger).toHaveBeenCalledWith("/media/usb/team.db");
  });
});

describe("the unreachable banner", () => {
  it("names the ledger and the time it stopped answering", async () => {
    await act(async () => {
      render(<LedgerUnreachable location="postgres://ada@db.example/team" since={SINCE} message="pool timed out" />);
    });
    const banner = screen.getByTestId("ledger-unreachable").textContent ?? "";
    expect(banner).toContain("postgres://ada@db.example/team");
    expect(banner).toContain(`is unreachable since ${new Date(Date.parse(SINCE)).toLocaleTimeString()}`);
    expect(banner).toContain("retrying");
  });
});

describe("the window", () => {
  async function start(status: LedgerStatus) {
    vi.mocked(commands.ledgerStatus).mockResolvedValue({ status: "ok", data: status });
    await act(async () => {
      render(<App />);
    });
  }

  async function announce(status: LedgerStatus) {
    await act(async () => {
      listeners.get("ledgerStatus")?.({ payload: status });
    });
  }

  it("shows why in place of the screens, and continues by itself once the ledger opens", async () => {
    await start(notOpen("unreachable", open.location));
    expect(screen.getByTestId("ledger-not-open")).toBeTruthy();
    expect(screen.queryByTestId("first-run")).toBeNull();
    // Every screen but Settings shows why.
    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: "Jobs" }));
    });
    expect(screen.getByTestId("ledger-not-open")).toBeTruthy();

    await announce(open);
    expect(screen.queryByTestId("ledger-not-open")).toBeNull();
    expect(await screen.findByTestId("first-run")).toBeTruthy();
  });

  it("shows a banner while the ledger does not answer, and drops it when it answers again", async () => {
    await start(open);
    expect(await screen.findByTestId("first-run")).toBeTruthy();
    expect(screen.queryByTestId("ledger-unreachable")).toBeNull();

    await announce({ ...open, state: { is: "unreachable", since: SINCE, message: "pool timed out" } });
    expect(screen.getByTestId("ledger-unreachable").textContent).toContain("retrying");
    const reads = vi.mocked(commands.needsAttention).mock.calls.length;

    await announce(open);
    expect(screen.queryByTestId("ledger-unreachable")).toBeNull();
    // Answering again, the window reads what it shows again.
    expect(vi.mocked(commands.needsAttention).mock.calls.length).toBeGreaterThan(reads);
  });
});
