import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";

import { commands, type ProviderView } from "../bindings";
import { stubResizeObserver } from "../test/dom";
import { summary } from "../test/fixtures";
import { JobsScreen } from "./JobsScreen";

vi.mock("../bindings", () => ({
  commands: { listJobs: vi.fn(), countJobs: vi.fn(), providers: vi.fn(), firstPaint: vi.fn(() => Promise.resolve()) },
}));

const listJobs = vi.mocked(commands.listJobs);
const countJobs = vi.mocked(commands.countJobs);

beforeAll(() => {
  stubResizeObserver();
});

afterEach(() => {
  cleanup();
  listJobs.mockReset();
  countJobs.mockReset();
  vi.useRealTimers();
});

describe("find on the Jobs screen", () => {
  it("feeds the search and the provider to the count and the list", async () => {
    vi.useFakeTimers();
    vi.mocked(commands.providers).mockResolvedValue({ status: "ok", data: [{ name: "sandbox" } as ProviderView, { name: "model-a" } as ProviderView] });
    countJobs.mockImplementation((_s, search) => Promise.resolve({ status: "ok" as const, data: search === null ? 2 : 1 }));
    listJobs.mockImplementation((_s, _a, _l, _o, search) =>
      Promise.resolve({ status: "ok" as const, data: { jobs: search === null ? [summary("a"), summary("b")] : [summary("b")], next: null } }),
    );
    await act(async () => {
      render(<JobsScreen now={Date.now()} open={() => undefined} go={() => undefined} />);
    });
    await act(async () => vi.runOnlyPendingTimersAsync());
    expect(screen.getByTestId("jobs-loaded").textContent).toBe("2 jobs");

    fireEvent.change(screen.getByTestId("jobs-search"), { target: { value: "  key-b " } });
    fireEvent.change(screen.getByTestId("jobs-provider"), { target: { value: "model-a" } });
    await act(async () => vi.advanceTimersByTimeAsync(250));
    expect(countJobs).toHaveBeenLastCalledWith(null, "key-b", "model-a");
    expect(listJobs.mock.lastCall?.slice(4)).toEqual(["key-b", "model-a"]);
    expect(screen.getByTestId("jobs-loaded").textContent).toBe("1 job");
    expect([...document.querySelectorAll(".job-row[data-job-id]")].map((e) => e.getAttribute("data-job-id"))).toEqual(["b"]);
  });

  it("shows each job's route from the list's summary, which carries no intent", async () => {
    countJobs.mockResolvedValue({ status: "ok", data: 1 });
    listJobs.mockResolvedValue({ status: "ok", data: { jobs: [{ ...summary("a"), route: ["primary", "fallback"] }], next: null } });
    await act(async () => {
      render(<JobsScreen now={Date.now()} open={() => undefined} go={() => undefined} />);
    });
    const row = document.querySelector(".job-row[data-job-id=a]");
    expect(row?.querySelector(".col-route")?.textContent).toBe("primary → fallback");
  });
});
