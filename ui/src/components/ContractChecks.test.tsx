import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type Check, type ContractView, type SampleResult } from "../bindings";
import { CheckResult, ProviderCheck } from "./ContractChecks";

vi.mock("../bindings", () => ({ commands: { checkContract: vi.fn() } }));

const checkContract = vi.mocked(commands.checkContract);

const contract: ContractView = {
  name: "summary",
  schema: { type: "object" },
  template: { system: "", user: "{{text}}" },
  samples: [{ text: "t" }],
  fields: ["text"],
  hash: "hash-now",
  updated_at: "2026-01-01T00:00:00Z",
  checks: [],
};

const sample = (passed: boolean, reason: string): SampleResult => ({
  passed,
  reason,
  latency_ms: passed ? 12 : null,
  prompt_tokens: passed ? 40 : null,
  tokenizer: passed ? "o200k_base" : "not checked: no tokenizer is known for this model",
  context_window: passed ? 128 : null,
  usage: null,
});

const check = (over: Partial<Check>): Check => ({
  id: "check-1",
  contract: "summary",
  contract_hash: "hash-now",
  provider: "model-a",
  provider_updated_at: "2026-01-01T00:00:00Z",
  passed: true,
  samples: [sample(true, "the answer kept the contract")],
  checked_at: "2026-01-02T00:00:00Z",
  current: true,
  ...over,
});

afterEach(() => {
  cleanup();
  checkContract.mockReset();
});

describe("a contract check", () => {
  it("shows a failed sample with its reason, and its tokens as not checked", () => {
    const failed = check({
      passed: false,
      current: false,
      samples: [
        sample(true, "the answer kept the contract"),
        sample(false, "contract_violation: additional property at /unexpected"),
      ],
    });
    render(<CheckResult check={failed} contract={contract} />);
    const row = document.querySelector('[data-sample="2"]');
    expect(row?.textContent).toContain("failed");
    expect(row?.textContent).toContain("contract_violation: additional property at /unexpected");
    expect(row?.textContent).toContain("not checked");
    expect(document.querySelector('[data-sample="1"]')?.textContent).toContain("40 of 128");
    expect(screen.getByTestId("check-counts").textContent).toBe("Does not count: it failed.");
  });

  it("says when a passed check no longer counts, and when it does", () => {
    render(<CheckResult check={check({ current: false, contract_hash: "hash-before" })} contract={contract} />);
    expect(screen.getByTestId("check-counts").textContent).toMatch(/^No longer counts/);
    cleanup();
    render(<CheckResult check={check({})} contract={contract} />);
    expect(screen.getByTestId("check-counts").textContent).toMatch(/^Counts: a job may fail over to model-a/);
  });

  it("runs a check on the button, saying what it costs, and shows the result when it returns", async () => {
    let answer: (c: Check) => void = () => undefined;
    checkContract.mockImplementation(
      () => new Promise((resolve) => (answer = (c) => resolve({ status: "ok", data: c }))),
    );
    render(<ProviderCheck contract={contract} provider="model-a" check={null} configured={true} />);
    expect(screen.getByText("Never checked.")).toBeTruthy();
    const button = screen.getByTestId("run-check-summary-model-a");
    expect(button.title).toMatch(/every sample of summary to model-a at temperature 0; a paid provider charges/);
    fireEvent.click(button);
    expect(checkContract).toHaveBeenCalledWith("summary", "model-a");
    expect(button.textContent).toBe("Checking…");
    await act(async () => answer(check({ id: "fresh", passed: false, current: false, samples: [sample(false, "timeout: no answer")] })));
    expect(document.querySelector('[data-check-id="fresh"]')?.textContent).toContain("timeout: no answer");
    expect(button.textContent).toBe("Run check");
  });
});
