// The Settings screen's ledger: with none open it says so and a ledger chosen is in use at
// once, a path typed with ~ is shown as the full path the app saved, and a shared ledger says
// which host it is connected to and, after a failover, that its primary moved.
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type LedgerStatus, type Settings } from "../bindings";
import { clock } from "../ledgerStatus";
import { settings } from "../test/fixtures";
import { SettingsScreen } from "./SettingsScreen";

vi.mock("../bindings", async () => (await import("../test/bindings")).settingsScreen());

const base = settings({ db_path: "/home/ada/.local/share/dev.onejob.app/onejob.db" });

afterEach(() => {
  cleanup();
  vi.mocked(commands.chooseLedger).mockReset();
});

async function open(shown: Settings, ledger: LedgerStatus | null = null) {
  vi.mocked(commands.settings).mockResolvedValue({ status: "ok", data: shown });
  await act(async () => {
    render(<SettingsScreen ledger={ledger} />);
  });
}

const team = "postgres://ada@10.0.0.1:5432,10.0.0.2:5432/team";
const shared = settings({ db_path: team, shared: true, source: "environment" });
function teamStatus(primary: LedgerStatus["primary"]): LedgerStatus {
  return { location: team, shared: true, primary, state: { is: "open" } };
}

describe("the ledger in Settings", () => {
  it("says no ledger is open, and a ledger chosen then is in use at once", async () => {
    const gone = "/media/usb/team.db";
    await open({ ...base, db_path: gone, open: false, source: "settings" });
    expect(screen.getByTestId("ledger-closed").textContent).toContain("No ledger is open");
    expect(commands.chooseLedger).not.toHaveBeenCalled();

    const other = "/home/ada/other.db";
    vi.mocked(commands.chooseLedger).mockResolvedValue({
      status: "ok",
      data: { ...base, db_path: other, open: true, source: "settings", next_start: null },
    });
    const field = screen.getByTestId<HTMLInputElement>("ledger-location");
    fireEvent.change(field, { target: { value: other } });
    await act(async () => {
      fireEvent.submit(field.closest("form") as HTMLFormElement);
    });
    expect(commands.chooseLedger).toHaveBeenCalledWith(other);
    expect(screen.getByTestId("ledger-saved").textContent).toBe("Saved, and in use now.");
    expect(screen.queryByTestId("ledger-closed")).toBeNull();
  });

  it("says nothing about a closed ledger when one is open", async () => {
    await open(base);
    expect(screen.queryByTestId("ledger-closed")).toBeNull();
  });

  it("shows the full path the app saved for a path typed with ~", async () => {
    await open(base);
    const full = "/home/ada/team.db";
    vi.mocked(commands.chooseLedger).mockResolvedValue({
      status: "ok",
      data: { ...base, next_start: full },
    });
    const field = screen.getByTestId<HTMLInputElement>("ledger-location");
    fireEvent.change(field, { target: { value: "~/team.db" } });
    await act(async () => {
      fireEvent.submit(field.closest("form") as HTMLFormElement);
    });
    expect(commands.chooseLedger).toHaveBeenCalledWith("~/team.db");
    expect(screen.getByTestId("ledger-next").textContent).toBe(full);
  });

  it("names the host a shared ledger is connected to, and says when its primary moved", async () => {
    await open(shared, teamStatus({ host: "10.0.0.1:5432", since: null }));
    expect(screen.getByTestId("ledger-primary").textContent).toBe("10.0.0.1:5432");
    expect(screen.getByTestId("ledger-primary-note").textContent).toBe("its primary, where onejob writes");
    cleanup();

    const since = "2026-03-01T10:02:41+01:00";
    await open(shared, teamStatus({ host: "10.0.0.2:5432", since }));
    expect(screen.getByTestId("ledger-primary").textContent).toBe("10.0.0.2:5432");
    expect(screen.getByTestId("ledger-primary-note").textContent).toBe(
      `The ledger's primary is now 10.0.0.2:5432, since ${clock(since)}, after a failover`,
    );
  });

  it("names no host for a ledger file", async () => {
    await open(base, { location: base.db_path, shared: false, primary: null, state: { is: "open" } });
    expect(screen.queryByTestId("ledger-primary")).toBeNull();
  });

  it("names a risk on the ledger with why and what to do, and nothing when there is none", async () => {
    const risk = {
      code: "no_synchronous_standby" as const,
      what: "The server has standbys, and none of them is synchronous.",
      why: "A failover can lose acknowledged jobs and send attempts twice.",
      what_to_do: "Name a standby in synchronous_standby_names.",
    };
    vi.mocked(commands.ledgerRisks).mockResolvedValue({ status: "ok", data: [risk] });
    await open(shared, teamStatus({ host: "10.0.0.1:5432", since: null }));
    const shown = screen.getByTestId("ledger-risk");
    expect(shown.getAttribute("data-code")).toBe("no_synchronous_standby");
    for (const said of [risk.what, risk.why, risk.what_to_do]) expect(shown.textContent).toContain(said);
    cleanup();

    vi.mocked(commands.ledgerRisks).mockResolvedValue({ status: "ok", data: [] });
    await open(shared, teamStatus({ host: "10.0.0.1:5432", since: null }));
    expect(screen.queryByTestId("ledger-risks")).toBeNull();
  });
});
