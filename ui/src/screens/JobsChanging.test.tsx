import { act, fireEvent, render } from "@testing-library/react";
import { useState } from "react";
import { describe, expect, it, vi } from "vitest";

import { LedgerContext } from "../api";
import type { JobSummary } from "../bindings";
import { summary } from "../test/fixtures";
import { mockJobsList } from "../test/jobsList";
import { JobsScreen } from "./JobsScreen";

vi.mock("../bindings", async () => (await import("../test/bindings")).jobsScreen());

const { listJobs, countJobs } = mockJobsList();

/** The Jobs screen under a ledger whose changes the test announces with the button. */
function Changing({ open }: { open: (id: string) => void }) {
  const [seq, setSeq] = useState(0);
  return (
    <LedgerContext.Provider value={{ seq, changed: () => setSeq((s) => s + 1) }}>
      <button type="button" data-testid="change" onClick={() => setSeq((s) => s + 1)} />
      <JobsScreen now={Date.now()} open={open} go={() => undefined} />
    </LedgerContext.Provider>
  );
}

function row(id: string): HTMLElement | null {
  return document.querySelector(`.job-row[data-job-id="${id}"]`);
}

describe("the Jobs list while the ledger changes", () => {
  it("keeps its rows until the new ones are read, so a click in between opens the job it was on", async () => {
    let jobs: JobSummary[] = [summary("a"), summary("b")];
    countJobs.mockImplementation(() => Promise.resolve({ status: "ok" as const, data: jobs.length }));
    listJobs.mockImplementation(() => Promise.resolve({ status: "ok" as const, data: { jobs, next: null } }));
    const open = vi.fn();
    render(<Changing open={open} />);
    await act(async () => new Promise((done) => setTimeout(done, 5)));
    const a = row("a");
    expect(a).not.toBeNull();

    // A new job arrives; the list's first page is slow to answer.
    jobs = [summary("c"), summary("a"), summary("b")];
    let answer: () => void = () => undefined;
    listJobs.mockImplementationOnce(
      () =>
        new Promise((done) => {
          answer = () => done({ status: "ok" as const, data: { jobs, next: null } });
        }),
    );
    await act(async () => {
      fireEvent.click(document.querySelector('[data-testid="change"]') as HTMLElement);
      await new Promise((done) => setTimeout(done, 5));
    });
    // Counted anew and waiting for the page: the rows shown are still there, each clickable.
    expect(countJobs.mock.calls.length).toBeGreaterThanOrEqual(2);
    expect(document.querySelectorAll(".job-row.placeholder")).toHaveLength(0);
    expect(row("a")).toBe(a);
    fireEvent.click(a as HTMLElement);
    expect(open).toHaveBeenLastCalledWith("a");

    await act(async () => {
      answer();
      await new Promise((done) => setTimeout(done, 5));
    });
    const shown = [...document.querySelectorAll(".job-row[data-job-id]")].map((e) => e.getAttribute("data-job-id"));
    expect(shown).toEqual(["c", "a", "b"]);
    // The job's row moved down as the same element: one found before still shows that job.
    expect(row("a")).toBe(a);
    expect(a?.getAttribute("data-job-id")).toBe("a");
    fireEvent.click(a as HTMLElement);
    expect(open).toHaveBeenLastCalledWith("a");
  });
});
