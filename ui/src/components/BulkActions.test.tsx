import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import type { Result } from "../api";
import { RESOLVE_WORDS } from "../actions";
import { commands, events, type BulkOperation, type BulkProgressed, type Error as EngineError } from "../bindings";
import { BulkActions, choicesFor, summaryOf } from "./BulkActions";

vi.mock("../bindings", () => ({
  commands: { bulkStart: vi.fn(), bulkRun: vi.fn() },
  events: { bulkProgressed: { listen: vi.fn() } },
}));

const bulkStart = vi.mocked(commands.bulkStart);
const bulkRun = vi.mocked(commands.bulkRun);
const listen = vi.mocked(events.bulkProgressed.listen);

function operation(over: Partial<BulkOperation>): BulkOperation {
  return { id: "op-1", key: "k", action: "resolve", matched: 200, changed: 0, skipped: [], done: false, dry_run: false, ...over };
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
    render(<BulkActions status="unknown" search="" provider="sandbox" total={200} />);

    fireEvent.click(screen.getByText("Select all 200 matching"));
    fireEvent.click(screen.getByTestId("bulk-failed"));
    const confirm = screen.getByTestId("bulk-confirm");
    expect(confirm.textContent).toContain("200 jobs at sandbox");
    expect(confirm.textContent).toContain(RESOLVE_WORDS.failed.risk);
    expect(bulkStart).not.toHaveBeenCalled();

    await act(async () => fireEvent.click(screen.getByTestId("bulk-confirm-yes")));
    expect(bulkStart).toHaveBeenCalledTimes(1);
    const [key, request] = bulkStart.mock.calls[0] ?? [];
    expect(key).toMatch(/^bulk-/);
    expect(request).toEqual({
      action: "resolve",
      as: "failed",
      filter: { status: "unknown", search: null, provider: "sandbox" },
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

  it("keeps the decision's key when the same confirmation is clicked again after a failure", async () => {
    progressListener();
    bulkStart.mockResolvedValue({ status: "ok", data: { operation: operation({ action: "cancel" }), replayed: false } });
    bulkRun.mockResolvedValueOnce({
      status: "error",
      error: { code: "storage", message: "the ledger is busy", details: { kind: "busy" } },
    } as Result<BulkOperation, EngineError>);
    bulkRun.mockResolvedValueOnce({ status: "ok", data: operation({ action: "cancel", changed: 200, done: true }) });
    render(<BulkActions status="queued" search="" provider={null} total={200} />);
    fireEvent.click(screen.getByText("Select all 200 matching"));
    fireEvent.click(screen.getByTestId("bulk-cancel"));
    expect(screen.getByTestId("bulk-confirm").textContent).toContain("200 jobs at every provider");

    await act(async () => fireEvent.click(screen.getByTestId("bulk-confirm-yes")));
    await act(async () => fireEvent.click(screen.getByTestId("bulk-confirm-yes")));
    expect(bulkStart).toHaveBeenCalledTimes(2);
    expect(bulkStart.mock.calls[1]?.[0]).toBe(bulkStart.mock.calls[0]?.[0]);
    expect(screen.getByTestId("bulk-result").textContent).toContain("200 cancelled");
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
    render(<BulkActions status={null} search="" provider={null} total={5} />);
    expect(screen.queryByTestId("bulk")).toBeNull();
    expect(summaryOf(operation({ action: "retry", changed: 3, skipped: [{ job_id: "j", code: "attempt_blocked" }] }))).toBe(
      "3 retried, 1 skipped: an attempt is open",
    );
  });
});
