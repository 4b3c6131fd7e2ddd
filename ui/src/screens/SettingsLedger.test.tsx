// The Settings screen's ledger: with none open it says so and a ledger chosen is in use at
// once, and a path typed with ~ is shown as the full path the app saved.
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type Settings } from "../bindings";
import { settings } from "../test/fixtures";
import { SettingsScreen } from "./SettingsScreen";

vi.mock("../bindings", async () => (await import("../test/bindings")).settingsScreen());

const base = settings({ db_path: "/home/ada/.local/share/dev.onejob.app/onejob.db" });

afterEach(() => {
  cleanup();
  vi.mocked(commands.chooseLedger).mockReset();
});

async function open(shown: Settings) {
  vi.mocked(commands.settings).mockResolvedValue({ status: "ok", data: shown });
  await act(async () => {
    render(<SettingsScreen />);
  });
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
});
