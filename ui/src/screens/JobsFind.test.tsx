import { act, fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";

import { commands, type ProviderView } from "../bindings";
import { EVERY_JOB } from "../listFilter";
import { summary } from "../test/fixtures";
import { mockJobsList } from "../test/jobsList";
import { JobsScreen } from "./JobsScreen";

vi.mock("../bindings", async () => (await import("../test/bindings")).jobsScreen());

const { listJobs, countJobs } = mockJobsList();

describe("find on the Jobs screen", () => {
  it("feeds the search and the provider to the count and the list", async () => {
    vi.useFakeTimers();
    vi.mocked(commands.providers).mockResolvedValue({ status: "ok", data: [{ name: "sandbox" } as ProviderView, { name: "model-a" } as ProviderView] });
    countJobs.mockImplementation((filter) => Promise.resolve({ status: "ok" as const, data: filter?.search == null ? 2 : 1 }));
    listJobs.mockImplementation((filter) =>
      Promise.resolve({ status: "ok" as const, data: { jobs: filter?.search == null ? [summary("a"), summary("b")] : [summary("b")], next: null } }),
    );
    await act(async () => {
      render(<JobsScreen now={Date.now()} open={() => undefined} go={() => undefined} />);
    });
    await act(async () => vi.runOnlyPendingTimersAsync());
    expect(screen.getByTestId("jobs-loaded").textContent).toBe("2 jobs");

    fireEvent.change(screen.getByTestId("jobs-search"), { target: { value: "  key-b " } });
    fireEvent.change(screen.getByTestId("jobs-provider"), { target: { value: "model-a" } });
    await act(async () => vi.advanceTimersByTimeAsync(250));
    const filter = { ...EVERY_JOB, search: "key-b", provider: "model-a" };
    expect(countJobs).toHaveBeenLastCalledWith(filter);
    expect(listJobs.mock.lastCall?.[0]).toEqual(filter);
    expect(screen.getByTestId("jobs-loaded").textContent).toBe("1 job");
    expect([...document.querySelectorAll(".job-row[data-job-id]")].map((e) => e.getAttribute("data-job-id"))).toEqual(["b"]);
  });

  it("feeds the open attempt's error kind and the creation times to the count, the list and select all", async () => {
    vi.useFakeTimers();
    vi.mocked(commands.providers).mockResolvedValue({ status: "ok", data: [{ name: "sandbox" } as ProviderView] });
    countJobs.mockImplementation((filter) => Promise.resolve({ status: "ok" as const, data: filter?.error_kind == null ? 3 : 2 }));
    listJobs.mockImplementation((filter) =>
      Promise.resolve({
        status: "ok" as const,
        data: { jobs: filter?.error_kind == null ? [summary("a"), summary("b"), summary("c")] : [summary("a"), summary("c")], next: null },
      }),
    );
    await act(async () => {
      render(<JobsScreen now={Date.now()} open={() => undefined} go={() => undefined} />);
    });
    await act(async () => vi.runOnlyPendingTimersAsync());
    expect(screen.getByTestId("jobs-loaded").textContent).toBe("3 jobs");
    // Unfiltered, the list offers no action on all of it.
    expect(screen.queryByTestId("bulk-select")).toBeNull();

    fireEvent.change(screen.getByTestId("jobs-error-kind"), { target: { value: " soft_timeout " } });
    fireEvent.change(screen.getByTestId("jobs-created-after"), { target: { value: "2026-12-03T14:00" } });
    fireEvent.change(screen.getByTestId("jobs-created-before"), { target: { value: "2026-12-03T16:30" } });
    await act(async () => vi.advanceTimersByTimeAsync(250));
    // The times as the person's local clock reads them, sent in UTC.
    const filter = {
      ...EVERY_JOB,
      error_kind: "soft_timeout",
      created_after: new Date("2026-12-03T14:00").toISOString(),
      created_before: new Date("2026-12-03T16:30").toISOString(),
    };
    expect(countJobs).toHaveBeenLastCalledWith(filter);
    expect(listJobs.mock.lastCall?.[0]).toEqual(filter);
    expect(screen.getByTestId("jobs-loaded").textContent).toBe("2 jobs");
    expect(screen.getByTestId("bulk-select").textContent).toBe("Select all 2 matching");

    // A time cleared is no longer a filter.
    fireEvent.change(screen.getByTestId("jobs-created-before"), { target: { value: "" } });
    await act(async () => vi.advanceTimersByTimeAsync(250));
    expect(countJobs).toHaveBeenLastCalledWith({ ...filter, created_before: null });
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

  it("opens filtered to a status when asked to, as the Spend screen's link to the unknown jobs does", async () => {
    countJobs.mockResolvedValue({ status: "ok", data: 1 });
    listJobs.mockResolvedValue({ status: "ok", data: { jobs: [summary("u", "unknown")], next: null } });
    await act(async () => {
      render(<JobsScreen now={Date.now()} open={() => undefined} go={() => undefined} status="unknown" />);
    });
    const filter = { ...EVERY_JOB, status: "unknown" };
    expect(countJobs).toHaveBeenCalledWith(filter);
    expect(countJobs).not.toHaveBeenCalledWith(EVERY_JOB);
    expect(listJobs.mock.lastCall?.[0]).toEqual(filter);
    expect(document.querySelector("[data-status=unknown]")?.getAttribute("aria-pressed")).toBe("true");
  });
});
