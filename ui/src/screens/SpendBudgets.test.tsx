import { act, cleanup, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type Budget, type ProviderView } from "../bindings";
import { click, settle, type } from "../test/input";
import { SpendScreen } from "./SpendScreen";

vi.mock("../bindings", async () => (await import("../test/bindings")).spendScreen());

const spend = vi.mocked(commands.spend);
const budgets = vi.mocked(commands.budgets);
const setBudget = vi.mocked(commands.setBudget);
const removeBudget = vi.mocked(commands.removeBudget);
const providers = vi.mocked(commands.providers);

afterEach(() => {
  cleanup();
  for (const mock of [spend, setBudget, removeBudget]) mock.mockReset();
});

const budget = (over: Partial<Budget>): Budget => ({
  name: "daily",
  owner: null,
  provider: "sandbox",
  currency: "USD",
  limit: "0.10",
  period: "day",
  used: "0.10",
  created_at: "2026-03-01T00:00:00Z",
  updated_at: "2026-03-01T00:00:00Z",
  ...over,
});

/** The Spend screen over a ledger where nothing was charged, with `listed` budgets. */
async function open(listed: Budget[]) {
  spend.mockImplementation(async (by) => ({ status: "ok", data: { by, lines: [], total: null } }));
  budgets.mockResolvedValue({ status: "ok", data: listed });
  providers.mockResolvedValue({ status: "ok", data: [{ name: "sandbox" }, { name: "openai" }] as ProviderView[] });
  await act(async () => {
    render(<SpendScreen showUnknown={() => undefined} />);
  });
  await settle();
}

const row = (name: string) => {
  const found = document.querySelector<HTMLElement>(`[data-budget="${name}"]`);
  if (found === null) throw new Error(`no row for budget ${name}`);
  return within(found);
};

describe("the Spend screen's budgets", () => {
  it("lists each budget with what it covers, its period, and its use against its limit", async () => {
    await open([
      budget({}),
      budget({ name: "team-month", owner: "local", provider: null, currency: "EUR", limit: "10.00", period: "month", used: "0.25" }),
    ]);
    const daily = row("daily");
    expect(daily.getByTestId("budget-use").textContent).toBe("0.10 / 0.10 USD");
    expect(daily.getByTestId("budget-scope").textContent).toBe("every owner's jobs at sandbox");
    expect(daily.getByTestId("budget-period").textContent).toBe("a day (UTC), in USD");
    expect(daily.getByTestId("budget-state").textContent).toBe("reached: what it covers waits for the next day");
    expect(daily.getByRole("meter").getAttribute("aria-valuenow")).toBe("100");

    const month = row("team-month");
    expect(month.getByTestId("budget-use").textContent).toBe("0.25 / 10.00 EUR");
    expect(month.getByTestId("budget-scope").textContent).toBe("local's jobs at every provider");
    expect(month.getByTestId("budget-state").textContent).toBe("2% used this month");
    expect(month.getByRole("meter").getAttribute("aria-valuenow")).toBe("2");
    // Even with nothing charged yet, the budgets stand on the screen.
    expect(screen.getByTestId("spend-empty")).toBeTruthy();
  });

  it("says when no budget is set", async () => {
    await open([]);
    expect(screen.getByTestId("budgets-none").textContent).toContain("No budget is set");
  });

  it("sets a budget with the name and the JSON the engine takes, each field explained", async () => {
    await open([]);
    setBudget.mockResolvedValue({ status: "ok", data: budget({}) });
    await click("budget-add");
    for (const field of ["name", "limit", "currency", "period", "provider", "owner"]) {
      expect(document.getElementById(`budget-${field}-hint`)?.textContent ?? "").not.toBe("");
    }
    // What the form cannot send is said beside its field, and nothing is sent.
    await type("budget-name", "team month");
    await type("budget-limit", "25,00");
    await click("budget-save");
    expect(screen.getByTestId("budget-error-name").textContent).toMatch(/1–64 characters/);
    expect(screen.getByTestId("budget-error-limit").textContent).toMatch(/decimal such as 10.00/);
    expect(setBudget).not.toHaveBeenCalled();

    await type("budget-name", "team-month");
    await type("budget-limit", "25.00");
    await type("budget-currency", "EUR");
    await type("budget-period", "month");
    await type("budget-provider", "openai");
    await type("budget-owner", "local");
    await click("budget-save");
    expect(setBudget).toHaveBeenCalledOnce();
    const [name, json] = setBudget.mock.calls[0] ?? [];
    expect(name).toBe("team-month");
    expect(JSON.parse(json ?? "{}")).toEqual({ limit: "25.00", currency: "EUR", period: "month", provider: "openai", owner: "local" });
    expect(screen.queryByTestId("budget-form")).toBeNull();
  });

  it("leaves the provider and the owner out when it covers every one", async () => {
    await open([]);
    setBudget.mockResolvedValue({ status: "ok", data: budget({}) });
    await click("budget-add");
    await type("budget-name", "all-of-it");
    await type("budget-limit", "100");
    await click("budget-save");
    expect(JSON.parse(setBudget.mock.calls[0]?.[1] ?? "{}")).toEqual({ limit: "100", currency: "USD", period: "day" });
  });

  it("shows the engine's refusal beside the field it names", async () => {
    await open([budget({})]);
    setBudget.mockResolvedValue({
      status: "error",
      error: { code: "invalid_input", message: "budget.limit: 99999999999 is more than onejob can count", details: { field: "budget.limit" } },
    } as never);
    await click("budget-edit-daily");
    expect(screen.getByTestId<HTMLInputElement>("budget-name").readOnly).toBe(true);
    expect(screen.getByTestId<HTMLInputElement>("budget-limit").value).toBe("0.10");
    await type("budget-limit", "99999999999");
    await click("budget-save");
    expect(setBudget).toHaveBeenCalledOnce();
    expect(screen.getByTestId("budget-error-limit").textContent).toMatch(/more than onejob can count/);
    expect(screen.getByTestId("budget-limit").getAttribute("aria-invalid")).toBe("true");
    expect(screen.queryByTestId("budget-error-form")).toBeNull();
    expect(screen.getByTestId("budget-form")).toBeTruthy();
  });

  it("removes a budget only once the question is answered", async () => {
    await open([budget({})]);
    removeBudget.mockResolvedValue({ status: "ok", data: null });
    await click("budget-remove-daily");
    expect(screen.getByTestId("remove-budget-effect").textContent).toMatch(/no longer held against it/);
    await click("remove-budget-no");
    expect(removeBudget).not.toHaveBeenCalled();
    expect(screen.queryByTestId("remove-budget-confirm")).toBeNull();
    await click("budget-remove-daily");
    await click("remove-budget-yes");
    expect(removeBudget).toHaveBeenCalledExactlyOnceWith("daily");
    expect(screen.queryByTestId("remove-budget-confirm")).toBeNull();
  });
});
