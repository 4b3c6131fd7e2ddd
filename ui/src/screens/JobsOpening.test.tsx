import { act, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { EVERY_JOB } from "../listFilter";
import { startOpening, takeOpeningCount, takeOpeningList, takeOpeningPage } from "../opening";
import { PAGE } from "../pager";
import { summary } from "../test/fixtures";
import { mockJobsList } from "../test/jobsList";
import { JobsScreen } from "./JobsScreen";

vi.mock("../bindings", async () => (await import("../test/bindings")).jobsScreen());

const { listJobs, countJobs } = mockJobsList();

afterEach(() => {
  // Whatever a test left untaken is dropped, so the next one starts without opening reads.
  takeOpeningCount({ ...EVERY_JOB, status: "failed" });
  expect(takeOpeningList()).toBeNull();
});

/** The ledger as the mocks answer it: two jobs, or one when a status is asked for. */
function ledger() {
  countJobs.mockImplementation((filter) => Promise.resolve({ status: "ok" as const, data: (filter?.status ?? null) === null ? 2 : 1 }));
  listJobs.mockImplementation((filter) =>
    Promise.resolve({
      status: "ok" as const,
      data: { jobs: (filter?.status ?? null) === null ? [summary("a"), summary("b")] : [summary("b", "failed")], next: null },
    }),
  );
}

function rows(): (string | null)[] {
  return [...document.querySelectorAll(".job-row[data-job-id]")].map((e) => e.getAttribute("data-job-id"));
}

describe("the Jobs screen's opening reads", () => {
  it("asks for the count and the newest page together, before the screen renders, and only once", async () => {
    vi.useFakeTimers();
    ledger();
    // Answers that arrive after the screen's first render: the screen waits for them.
    const later = <T,>(answer: T) => new Promise<T>((done) => setTimeout(() => done(answer), 1));
    countJobs.mockImplementationOnce(() => later({ status: "ok" as const, data: 2 }));
    listJobs.mockImplementationOnce(() => later({ status: "ok" as const, data: { jobs: [summary("a"), summary("b")], next: null } }));
    startOpening();
    // Both are on their way before any component exists.
    expect(countJobs).toHaveBeenCalledTimes(1);
    expect(listJobs).toHaveBeenCalledTimes(1);
    expect(listJobs).toHaveBeenLastCalledWith(null, null, PAGE, false);

    await act(async () => {
      render(<JobsScreen now={Date.now()} open={() => undefined} go={() => undefined} />);
    });
    await act(async () => vi.runOnlyPendingTimersAsync());
    expect(screen.getByTestId("jobs-loaded").textContent).toBe("2 jobs");
    expect(rows()).toEqual(["a", "b"]);
    // The screen took the opening reads instead of asking again.
    expect(countJobs).toHaveBeenCalledTimes(1);
    expect(listJobs).toHaveBeenCalledTimes(1);

    // Any later read goes to the ledger.
    fireEvent.click(screen.getByRole("button", { name: /^failed$/ }));
    await act(async () => vi.runOnlyPendingTimersAsync());
    expect(countJobs).toHaveBeenCalledTimes(2);
    expect(countJobs).toHaveBeenLastCalledWith({ ...EVERY_JOB, status: "failed" });
    expect(listJobs).toHaveBeenCalledTimes(2);
    expect(rows()).toEqual(["b"]);
  });

  it("are the first render's list when both have answered before the screen renders", async () => {
    ledger();
    startOpening();
    // The answers arrive (the screen's module and React are still loading).
    await Promise.resolve();
    await Promise.resolve();
    act(() => {
      render(<JobsScreen now={Date.now()} open={() => undefined} go={() => undefined} />);
    });
    // No read has been waited for: the first render holds the rows.
    expect(screen.getByTestId("jobs-loaded").textContent).toBe("2 jobs");
    expect(rows()).toEqual(["a", "b"]);
    expect(countJobs).toHaveBeenCalledTimes(1);
    expect(listJobs).toHaveBeenCalledTimes(1);

    // Once the window listens for changes, the list is read again in place: a job that
    // finished between the opening reads and the listener shows its new status.
    listJobs.mockImplementation(() =>
      Promise.resolve({ status: "ok" as const, data: { jobs: [summary("a", "succeeded"), summary("b")], next: null } }),
    );
    await act(async () => new Promise((done) => setTimeout(done, 5)));
    expect(countJobs).toHaveBeenCalledTimes(2);
    expect(countJobs).toHaveBeenLastCalledWith(EVERY_JOB);
    expect(listJobs).toHaveBeenCalledTimes(2);
    expect(rows()).toEqual(["a", "b"]);
    expect(document.querySelector('.job-row[data-job-id="a"]')?.textContent).toContain("succeeded");

    // A filter, and then all jobs again, read the ledger.
    fireEvent.click(screen.getByRole("button", { name: /^failed$/ }));
    await act(async () => Promise.resolve());
    fireEvent.click(screen.getByRole("button", { name: /^all$/ }));
    await act(async () => Promise.resolve());
    expect(countJobs).toHaveBeenCalledTimes(4);
    expect(countJobs).toHaveBeenLastCalledWith(EVERY_JOB);
    expect(rows()).toEqual(["a", "b"]);
  });

  it("open on the first-run panel of an empty ledger in the first render", async () => {
    countJobs.mockResolvedValue({ status: "ok", data: 0 });
    listJobs.mockResolvedValue({ status: "ok", data: { jobs: [], next: null } });
    startOpening();
    await Promise.resolve();
    await Promise.resolve();
    act(() => {
      render(<JobsScreen now={Date.now()} open={() => undefined} go={() => undefined} />);
    });
    expect(screen.getByTestId("first-run")).toBeTruthy();
    expect(screen.getByTestId("jobs-loaded").textContent).toBe("0 jobs");
  });

  it("are not the first list when one answered with an error: the screen shows it", async () => {
    countJobs.mockResolvedValueOnce({ status: "error", error: { code: "database", message: "the ledger is locked" } } as never);
    listJobs.mockResolvedValue({ status: "ok" as const, data: { jobs: [], next: null } });
    startOpening();
    await Promise.resolve();
    await Promise.resolve();
    expect(takeOpeningList()).toBeNull();
    await act(async () => {
      render(<JobsScreen now={Date.now()} open={() => undefined} go={() => undefined} />);
    });
    expect(document.body.textContent).toContain("the ledger is locked");
    expect(countJobs).toHaveBeenCalledTimes(1);
  });

  it("are each taken once, and only with their own arguments", () => {
    ledger();
    startOpening();
    expect(takeOpeningPage(null, null, PAGE, true)).toBeNull();
    expect(takeOpeningPage({ ...EVERY_JOB, search: "key" }, null, PAGE, false)).toBeNull();
    expect(takeOpeningPage({ ...EVERY_JOB, error_kind: "soft_timeout" }, null, PAGE, false)).toBeNull();
    expect(takeOpeningCount(EVERY_JOB)).not.toBeNull();
    expect(takeOpeningPage(EVERY_JOB, null, PAGE, false)).not.toBeNull();
    expect(takeOpeningPage(null, null, PAGE, false)).toBeNull();
    expect(takeOpeningCount(null)).toBeNull();
  });

  it("drops the opening page once another count has been asked for", () => {
    ledger();
    startOpening();
    // The list started over under a filter before the opening count was taken.
    expect(takeOpeningCount({ ...EVERY_JOB, status: "queued" })).toBeNull();
    expect(takeOpeningCount(EVERY_JOB)).toBeNull();
    expect(takeOpeningPage(EVERY_JOB, null, PAGE, false)).toBeNull();

    // The opening count was taken, then the list counted again (the ledger changed) before
    // the page was asked for: the page is from before that change.
    startOpening();
    expect(takeOpeningCount(null)).not.toBeNull();
    expect(takeOpeningCount(null)).toBeNull();
    expect(takeOpeningPage(null, null, PAGE, false)).toBeNull();
  });

  it("shows a failed opening read as the screen's error", async () => {
    vi.useFakeTimers();
    countJobs.mockResolvedValueOnce({ status: "error", error: { code: "database", message: "the ledger is locked" } } as never);
    listJobs.mockResolvedValue({ status: "ok" as const, data: { jobs: [], next: null } });
    startOpening();
    await act(async () => {
      render(<JobsScreen now={Date.now()} open={() => undefined} go={() => undefined} />);
    });
    await act(async () => vi.runOnlyPendingTimersAsync());
    expect(document.body.textContent).toContain("the ledger is locked");
    expect(countJobs).toHaveBeenCalledTimes(1);
  });
});
