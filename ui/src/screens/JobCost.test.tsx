import { act, cleanup, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type JobView } from "../bindings";
import { attempt, jobView } from "../test/fixtures";
import { JobScreen } from "./JobScreen";

vi.mock("../bindings", async () => (await import("../test/bindings")).jobScreen());

const read = vi.mocked(commands.job);

afterEach(() => {
  cleanup();
  read.mockReset();
});

async function open(data: JobView) {
  read.mockResolvedValue({ status: "ok", data });
  await act(async () => {
    render(<JobScreen id="job-1" now={Date.parse("2026-01-01T00:05:00Z")} back={() => undefined} />);
  });
}

const usd = (spent: string, at_risk: string) => ({ currency: "USD", spent, at_risk });

describe("what a job cost", () => {
  it("shows each attempt's cost, at risk for an unknown one, and the job's total per currency as the ledger wrote them", async () => {
    await open(
      jobView("unknown", {
        attempts: [
          { ...attempt(1, "succeeded"), cost: usd("0.050000001", "0.00") },
          { ...attempt(2, "unknown"), cost: usd("0.00", "1.2") },
          { ...attempt(3, "failed"), cost: { currency: "EUR", spent: "0.10", at_risk: "0.00" } },
        ],
        cost: [usd("0.050000001", "1.2"), { currency: "EUR", spent: "0.10", at_risk: "0.00" }],
      }),
    );
    const costs = screen.getAllByTestId("attempt-cost").map((c) => c.textContent);
    // Exactly as given: no digit lost or added by a number in between.
    expect(costs).toEqual(["0.050000001 USD", "1.2 USD at risk", "0.10 EUR"]);
    expect(screen.getAllByTestId("attempt-cost")[1]?.className).toContain("at-risk");
    const lines = Array.from(screen.getByTestId("job-cost").children).map((l) => l.textContent);
    expect(lines).toEqual(["0.050000001 USD spent, 1.2 USD at risk", "0.10 EUR spent"]);
  });

  it("shows nothing new for a job at a provider without a price", async () => {
    await open(jobView("succeeded", { attempts: [{ ...attempt(1, "succeeded"), cost: null }, attempt(2, "succeeded")] }));
    expect(screen.queryByTestId("attempt-cost")).toBeNull();
    expect(screen.queryByTestId("job-cost")).toBeNull();
    expect(screen.queryByText("Cost")).toBeNull();
  });
});
