import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands } from "../bindings";
import { settings } from "../test/fixtures";
import { SettingsScreen } from "./SettingsScreen";

vi.mock("../bindings", async () => (await import("../test/bindings")).settingsScreen());

const base = settings();

afterEach(() => {
  cleanup();
  vi.mocked(commands.setConcurrency).mockReset();
});

async function open() {
  vi.mocked(commands.settings).mockResolvedValue({ status: "ok", data: base });
  await act(async () => {
    render(<SettingsScreen />);
  });
}

describe("attempts sent at once", () => {
  it("shows the current count and applies a new one", async () => {
    await open();
    const field = screen.getByTestId<HTMLInputElement>("concurrency");
    expect(field.value).toBe("32");
    vi.mocked(commands.setConcurrency).mockResolvedValue({ status: "ok", data: { ...base, concurrency: 4 } });
    fireEvent.change(field, { target: { value: "4" } });
    await act(async () => {
      fireEvent.submit(field.closest("form") as HTMLFormElement);
    });
    expect(commands.setConcurrency).toHaveBeenCalledWith(4);
    expect(screen.getByTestId<HTMLInputElement>("concurrency").value).toBe("4");
    expect(screen.getByTestId("concurrency-saved")).toBeTruthy();
  });

  it("names what is wrong with a count out of range and sends nothing", async () => {
    await open();
    const field = screen.getByTestId<HTMLInputElement>("concurrency");
    for (const bad of ["0", "1025", "2.5", ""]) {
      fireEvent.change(field, { target: { value: bad } });
      await act(async () => {
        fireEvent.submit(field.closest("form") as HTMLFormElement);
      });
      expect(screen.getByTestId("concurrency-error").textContent).toContain("from 1 to 1024");
    }
    expect(commands.setConcurrency).not.toHaveBeenCalled();
    expect(field.value).toBe("");
  });

  it("shows the engine's refusal beside the field", async () => {
    await open();
    vi.mocked(commands.setConcurrency).mockResolvedValue({
      status: "error",
      error: { code: "storage", message: "cannot save the setting: disk full", details: { kind: "failed" } },
    } as never);
    await act(async () => {
      fireEvent.submit(screen.getByTestId("concurrency").closest("form") as HTMLFormElement);
    });
    expect(screen.getByTestId("concurrency-error").textContent).toContain("disk full");
  });
});
