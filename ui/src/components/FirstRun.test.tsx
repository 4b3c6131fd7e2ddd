import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type Check, type ContractView } from "../bindings";
import { FirstRun, SAMPLE_CONTRACT } from "./FirstRun";

vi.mock("../bindings", () => ({ commands: { saveContract: vi.fn(), checkContract: vi.fn() } }));

const saveContract = vi.mocked(commands.saveContract);
const checkContract = vi.mocked(commands.checkContract);

const saved: ContractView = {
  name: "sandbox-sample",
  schema: SAMPLE_CONTRACT.schema,
  template: SAMPLE_CONTRACT.template,
  samples: SAMPLE_CONTRACT.samples,
  fields: ["name"],
  hash: "hash-now",
  updated_at: "2026-01-01T00:00:00Z",
  checks: [],
};

const check = (passed: boolean, reason: string): Check => ({
  id: "check-1",
  contract: "sandbox-sample",
  contract_hash: "hash-now",
  provider: "sandbox",
  provider_updated_at: "2026-01-01T00:00:00Z",
  passed,
  samples: [0, 1].map(() => ({
    passed,
    reason,
    latency_ms: 300,
    prompt_tokens: null,
    tokenizer: "not checked",
    context_window: null,
    usage: null,
  })),
  checked_at: "2026-01-02T00:00:00Z",
  current: passed,
});

afterEach(() => {
  cleanup();
  saveContract.mockReset();
  checkContract.mockReset();
});

describe("the first-run guide's contract", () => {
  it("is saved and checked against the sandbox in one click, and the check is shown", async () => {
    saveContract.mockResolvedValue({ status: "ok", data: saved });
    let answer: (c: Check) => void = () => undefined;
    checkContract.mockImplementation(() => new Promise((resolve) => (answer = (c) => resolve({ status: "ok", data: c }))));
    const go = vi.fn();
    render(<FirstRun go={go} />);
    const button = screen.getByTestId("first-run-contract");
    await act(async () => fireEvent.click(button));
    expect(saveContract).toHaveBeenCalledTimes(1);
    const sent: unknown = JSON.parse(saveContract.mock.calls[0]?.[0] ?? "null");
    expect(sent).toEqual(SAMPLE_CONTRACT);
    expect(checkContract).toHaveBeenCalledWith("sandbox-sample", "sandbox");
    expect(button.textContent).toBe("Checking…");
    await act(async () => answer(check(true, "the answer kept the contract")));
    const result = screen.getByTestId("first-run-contract-result");
    expect(result.dataset.passed).toBe("true");
    expect(result.textContent).toContain("2 of 2 sample answers kept it");
    fireEvent.click(screen.getByTestId("first-run-contract-submit"));
    expect(go).toHaveBeenCalledWith("submit");
  });

  it("shows why a sample failed, and an error when the contract cannot be saved", async () => {
    saveContract.mockResolvedValue({ status: "ok", data: saved });
    checkContract.mockResolvedValue({ status: "ok", data: check(false, "contract_violation: at /unexpected") });
    render(<FirstRun go={() => undefined} />);
    await act(async () => fireEvent.click(screen.getByTestId("first-run-contract")));
    const result = screen.getByTestId("first-run-contract-result");
    expect(result.dataset.passed).toBe("false");
    expect(result.textContent).toContain("contract_violation: at /unexpected");
    cleanup();

    saveContract.mockResolvedValue({
      status: "error",
      error: { code: "storage", message: "the ledger is busy", details: { kind: "busy" } },
    });
    render(<FirstRun go={() => undefined} />);
    await act(async () => fireEvent.click(screen.getByTestId("first-run-contract")));
    expect(screen.getByRole("alert").textContent).toContain("the ledger is busy");
    expect(checkContract).toHaveBeenCalledTimes(1);
  });
});
