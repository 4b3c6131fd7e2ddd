// The Settings screen's ledger: a missing one is said so and can be made anew there, and a
// path typed with ~ is shown as the full path the app saved.
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type Settings } from "../bindings";
import { settings } from "../test/fixtures";
import { SettingsScreen } from "./SettingsScreen";

vi.mock("../bindings", () => ({
  commands: { settings: vi.fn(), setConcurrency: vi.fn(), chooseLedger: vi.fn() },
}));

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
  it("says a chosen ledger is missing and makes a new one there only when asked", async () => {
    const gone = "/media/usb/team.db";
    await open({ ...base, db_path: gone, missing: true, source: "settings" });
    const alert = screen.getByTestId("ledger-missing");
    expect(alert.textContent).toContain("The ledger is missing");
    expect(alert.textContent).toContain(gone);
    expect(commands.chooseLedger).not.toHaveBeenCalled();

    vi.mocked(commands.chooseLedger).mockResolvedValue({
      status: "ok",
      data: { ...base, db_path: gone, missing: true, source: "settings", next_start: gone },
    });
    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: "Create a new ledger there" }));
    });
    expect(commands.chooseLedger).toHaveBeenCalledWith(gone);
    expect(screen.getByTestId("ledger-created").textContent).toContain("Restart onejob");
    expect(screen.getByTestId("ledger-next").textContent).toBe(gone);
  });

  it("says nothing is missing when the ledger is there", async () => {
    await open(base);
    expect(screen.queryByTestId("ledger-missing")).toBeNull();
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
