// The window's ledger states: a ledger that could not be opened is explained with what can be
// done, in place of the screens; an open ledger that stops answering gets a banner that goes
// once it answers again; the window continues by itself when the ledger opens; and a shared
// ledger whose primary moved after a failover says where to, until the person dismisses it.
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";

import { App } from "./App";
import { commands, type LedgerStatus, type MovedAside } from "./bindings";
import { LedgerNotOpen, LedgerUnreachable, type NotOpenStatus } from "./components/LedgerNotOpen";
import { clock } from "./ledgerStatus";
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
      settings: vi.fn(),
      setConcurrency: vi.fn(),
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
    primary: null,
    state: { is: "not_open", problem, since: SINCE, message: "database: file is not a database", retrying: problem === "unreachable" },
  };
}

const open: LedgerStatus = {
  location: "postgres://ada@db.example/team",
  shared: true,
  primary: { host: "db1.example:5432", since: null },
  state: { is: "open" },
};

/** `open` after a failover to `host` at `since`. */
function failedOver(host: string, since: string): LedgerStatus {
  return { ...open, primary: { host, since } };
}

beforeAll(() => {
  stubResizeObserver();
  vi.mocked(commands.providers).mockResolvedValue({ status: "ok", data: [] });
  vi.mocked(commands.needsAttention).mockResolvedValue({ status: "ok", data: 0 });
  vi.mocked(commands.countJobs).mockResolvedValue({ status: "ok", data: 0 });
  vi.mocked(commands.listJobs).mockResolvedValue({ status: "ok", data: { jobs: [], next: null } });
  vi.mocked(commands.settings).mockResolvedValue({
    status: "ok",
    data: { db_path: open.location, open: true, shared: true, source: "environment", next_start: null, owner: "local", concurrency: 32 },
  });
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
      status: { location: "/home/ada/team.db", shared: false, primary: null, state: { is: "open" } },
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

  it("says where the primary moved after a failover, until dismissed, and again after another", async () => {
    await start(open);
    expect(await screen.findByTestId("first-run")).toBeTruthy();
    expect(screen.queryByTestId("ledger-primary-moved")).toBeNull();

    await announce(failedOver("db2.example:5432", SINCE));
    const banner = screen.getByTestId("ledger-primary-moved").textContent ?? "";
    expect(banner).toContain(`The ledger's primary is now db2.example:5432, since ${clock(SINCE)}`);
    expect(banner).toContain("a standby took over");
    // Settings says the same, with the host it is connected to.
    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: "Settings" }));
    });
    expect((await screen.findByTestId("ledger-primary")).textContent).toBe("db2.example:5432");
    expect(screen.getByTestId("ledger-primary-note").textContent).toContain(
      `The ledger's primary is now db2.example:5432, since ${clock(SINCE)}`,
    );

    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: "Dismiss" }));
    });
    expect(screen.queryByTestId("ledger-primary-moved")).toBeNull();
    // The same move told again stays dismissed; Settings still says it.
    await announce(failedOver("db2.example:5432", SINCE));
    expect(screen.queryByTestId("ledger-primary-moved")).toBeNull();
    expect(screen.getByTestId("ledger-primary-note").textContent).toContain("primary is now db2.example:5432");

    const later = "2026-03-01T16:40:05+01:00";
    await announce(failedOver("db1.example:5432", later));
    expect(screen.getByTestId("ledger-primary-moved").textContent).toContain(
      `The ledger's primary is now db1.example:5432, since ${clock(later)}`,
    );
  });

  it("says nothing of a primary on a ledger file", async () => {
    await start({ location: "/home/ada/team.db", shared: false, primary: null, state: { is: "open" } });
    expect(await screen.findByTestId("first-run")).toBeTruthy();
    expect(screen.queryByTestId("ledger-primary-moved")).toBeNull();
    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: "Settings" }));
    });
    expect(await screen.findByTestId("db-path")).toBeTruthy();
    expect(screen.queryByTestId("ledger-primary")).toBeNull();
  });
});
