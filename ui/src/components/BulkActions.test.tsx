import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import type { Result } from "../api";
import { RESOLVE_WORDS, SUCCEEDED_MANY_RISK } from "../actions";
import { commands, events, type BulkOperation, type BulkProgressed, type Error as EngineError } from "../bindings";
import { EVERY_JOB } from "../listFilter";
import { BulkActions, choicesFor, riskOf, summaryOf, whereOf } from "./BulkActions";

vi.mock("../bindings", async (actual) => ({
  BULK_PROVIDERS_NAMED: (await actual<typeof import("../bindings")>()).BULK_PROVIDERS_NAMED,
  commands: { bulkStart: vi.fn(), bulkRun: vi.fn(), bulkDiscard: vi.fn(() => Promise.resolve({ status: "ok", data: null })) },
  events: { bulkProgressed: { listen: vi.fn() } },
}));

const bulkStart = vi.mocked(commands.bulkStart);
const bulkRun = vi.mocked(commands.bulkRun);
const bulkDiscard = vi.mocked(commands.bulkDiscard);
const listen = vi.mocked(events.bulkProgressed.listen);

function operation(over: Partial<BulkOperation>): BulkOperation {
  return { id: "op-1", key: "k", action: "resolve", matched: 200, providers: [], changed: 0, skipped: [], done: false, dry_run: false, ...over };
}

/** The progress listener the component registered, to play the backend's events. */
function progressListener(): (e: { payload: BulkProgressed }) => void {
  let heard: ((e: { payload: BulkProgressed }) => void) | null = null;
  listen.mockImplementation((handler) => {
    heard = handler as (e: { payload: BulkProgressed }) => void;
    return Promise.resolve(() => undefined);
  });
  return (e) => heard?.(e);
}

afterEach(() => {
  cleanup();
  vi.clearAllMocks();
});

describe("select all matching", () => {
  it("confirms once naming the count, the provider and the risk, shows progress, then the result with the skipped listed", async () => {
    const emit = progressListener();
    bulkStart.mockResolvedValue({ status: "ok", data: { operation: operation({}), replayed: false } });
    let finish: (r: Result<BulkOperation, EngineError>) => void = () => undefined;
    bulkRun.mockReturnValue(new Promise((resolve) => (finish = resolve)));
    const filter = { ...EVERY_JOB, status: "unknown" as const, provider: "sandbox", error_kind: "soft_timeout", created_after: "2026-12-03T14:00:00.000Z" };
    render(<BulkActions filter={filter} total={200} />);

    fireEvent.click(screen.getByText("Select all 200 matching"));
    // The confirmation fixes the set as it opens, and changes nothing yet.
    await act(async () => fireEvent.click(screen.getByTestId("bulk-failed")));
    const confirm = screen.getByTestId("bulk-confirm");
    expect(confirm.textContent).toContain("200 jobs at sandbox");
    expect(confirm.textContent).toContain(RESOLVE_WORDS.failed.risk);
    expect(bulkStart).toHaveBeenCalledTimes(1);
    expect(bulkRun).not.toHaveBeenCalled();

    await act(async () => fireEvent.click(screen.getByTestId("bulk-confirm-yes")));
    expect(bulkStart).toHaveBeenCalledTimes(1);
    expect(bulkRun).toHaveBeenCalledWith("op-1");
    const [key, request] = bulkStart.mock.calls[0] ?? [];
    expect(key).toMatch(/^bulk-/);
    expect(request).toEqual({
      action: "resolve",
      as: "failed",
      filter,
      provider: null,
      dry_run: false,
    });
    await act(async () => emit({ payload: { id: "op-1", progress: { matched: 200, changed: 99, skipped: 1, decided: 100 } } }));
    expect(screen.getByTestId("bulk-progress").textContent).toContain("100 of 200 decided");

    const skipped = [
      { job_id: "job-a", code: "invalid_transition" },
      { job_id: "job-b", code: "invalid_transition" },
    ];
    await act(async () => finish({ status: "ok", data: operation({ changed: 198, skipped, done: true }) }));
    expect(screen.getByTestId("bulk-result").textContent).toContain("198 resolved, 2 skipped: moved meanwhile");
    expect(screen.getByTestId("bulk-skipped").querySelectorAll("li")).toHaveLength(2);
  });

  it("names the set it fixed, not the list's count, and runs that same operation again after a failure", async () => {
    progressListener();
    // Two of the 200 the list showed moved before the confirmation opened.
    bulkStart.mockResolvedValue({ status: "ok", data: { operation: operation({ action: "cancel", matched: 198, providers: ["alpha", "beta"] }), replayed: false } });
    bulkRun.mockResolvedValueOnce({
      status: "error",
      error: { code: "storage", message: "the ledger is busy", details: { kind: "busy" } },
    } as Result<BulkOperation, EngineError>);
    bulkRun.mockResolvedValueOnce({ status: "ok", data: operation({ action: "cancel", matched: 198, changed: 198, done: true }) });
    render(<BulkActions filter={{ ...EVERY_JOB, status: "queued" }} total={200} />);
    fireEvent.click(screen.getByText("Select all 200 matching"));
    await act(async () => fireEvent.click(screen.getByTestId("bulk-cancel")));
    expect(screen.getByTestId("bulk-confirm").textContent).toContain("Cancel 198 jobs at alpha and beta.");

    await act(async () => fireEvent.click(screen.getByTestId("bulk-confirm-yes")));
    expect(bulkRun).toHaveBeenCalledTimes(1);
    expect(screen.getByTestId("bulk-confirm-yes")).toBeTruthy();
    await act(async () => fireEvent.click(screen.getByTestId("bulk-confirm-yes")));
    expect(bulkStart).toHaveBeenCalledTimes(1);
    expect(bulkRun.mock.calls).toEqual([["op-1"], ["op-1"]]);
    expect(bulkDiscard).not.toHaveBeenCalled();
    expect(screen.getByTestId("bulk-result").textContent).toContain("198 cancelled");
  });

  it("discards the set it fixed when the person keeps the jobs as they are", async () => {
    bulkStart.mockResolvedValue({ status: "ok", data: { operation: operation({}), replayed: false } });
    render(<BulkActions filter={{ ...EVERY_JOB, status: "unknown" }} total={200} />);
    fireEvent.click(screen.getByText("Select all 200 matching"));
    await act(async () => fireEvent.click(screen.getByTestId("bulk-abandoned")));
    await act(async () => fireEvent.click(screen.getByTestId("bulk-confirm-no")));
    expect(bulkDiscard).toHaveBeenCalledWith("op-1");
    expect(bulkRun).not.toHaveBeenCalled();
    expect(screen.queryByTestId("bulk-confirm")).toBeNull();
  });

  it("names the providers of the set, the filter's one before the set is known, and says when there may be more", () => {
    expect(whereOf(["payments"], null)).toBe("at payments");
    expect(whereOf(["a", "b", "c"], null)).toBe("at a, b and c");
    expect(whereOf([], "payments")).toBe("at payments");
    expect(whereOf([], null)).toBe("at every provider");
    const ten = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"];
    expect(whereOf(ten, null)).toBe(`at ${ten.join(", ")} and perhaps others`);
  });

  it("offers only the actions the filter allows, and nothing on the unfiltered list", () => {
    expect(choicesFor("unknown").map((c) => (c.action === "resolve" ? c.verdict : c.action))).toEqual([
      "succeeded",
      "failed",
      "abandoned",
      "retry",
      "cancel",
    ]);
    expect(choicesFor("queued").map((c) => c.action)).toEqual(["retry", "cancel"]);
    expect(choicesFor("succeeded")).toEqual([]);
    render(<BulkActions filter={EVERY_JOB} total={5} />);
    expect(screen.queryByTestId("bulk")).toBeNull();
    expect(summaryOf(operation({ action: "retry", changed: 3, skipped: [{ job_id: "j", code: "attempt_blocked" }] }))).toBe(
      "3 retried, 1 skipped: an attempt is open",
    );
  });

  it("offers select all on a list narrowed by error kind or creation time alone", () => {
    render(<BulkActions filter={{ ...EVERY_JOB, error_kind: "lease_expired" }} total={3} />);
    expect(screen.getByTestId("bulk-select").textContent).toBe("Select all 3 matching");
    cleanup();
    render(<BulkActions filter={{ ...EVERY_JOB, created_before: "2026-12-03T14:00:00.000Z" }} total={4} />);
    expect(screen.getByTestId("bulk-select").textContent).toBe("Select all 4 matching");
  });

  it("warns in the single job's words, a success on many recording no result", () => {
    expect(riskOf({ action: "resolve", verdict: "abandoned" })).toBe(RESOLVE_WORDS.abandoned.risk);
    expect(riskOf({ action: "resolve", verdict: "succeeded" })).toBe(SUCCEEDED_MANY_RISK);
    expect(SUCCEEDED_MANY_RISK.endsWith(RESOLVE_WORDS.succeeded.risk.split("; ")[1] ?? "?")).toBe(true);
  });
});
