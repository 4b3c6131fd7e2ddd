import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type Spend, type SpendBy } from "../bindings";
import { settle } from "../test/input";
import { SpendScreen } from "./SpendScreen";

vi.mock("../bindings", async () => (await import("../test/bindings")).spendScreen());

const spend = vi.mocked(commands.spend);

afterEach(() => {
  cleanup();
  spend.mockReset();
});

const usd = (key: string, spent: string, at_risk: string) => ({ key, currency: "USD", spent, at_risk });

/** The ledger's answer by day and by provider, in USD: two days, two providers, one unknown. */
const LEDGER: Record<SpendBy, Spend> = {
  day: {
    by: "day",
    lines: [usd("2026-03-01", "0.10", "0.00"), usd("2026-03-02", "0.15", "0.05")],
    total: { currency: "USD", spent: "0.25", at_risk: "0.05" },
  },
  provider: {
    by: "provider",
    lines: [usd("sandbox", "0.20", "0.05"), usd("openai", "0.050000001", "0.00")],
    total: { currency: "USD", spent: "0.250000001", at_risk: "0.05" },
  },
  owner: { by: "owner", lines: [], total: null },
};

const nothing = (by: SpendBy): Spend => ({ by, lines: [], total: null });

async function open(answer: (by: SpendBy, since: string | null, currency: string | null) => Spend | string) {
  spend.mockImplementation(async (by, since, currency) => {
    const given = answer(by, since, currency);
    return typeof given === "string"
      ? ({ status: "error", error: { code: "invalid_input", message: given, details: { field: "currency" } } } as never)
      : { status: "ok", data: given };
  });
  const showUnknown = vi.fn();
  await act(async () => {
    render(<SpendScreen showUnknown={showUnknown} />);
  });
  await settle();
  return showUnknown;
}

describe("the Spend screen", () => {
  it("charts spend per day and per provider, each line in the ledger's own words", async () => {
    await open((by) => LEDGER[by]);
    for (const [id, keys] of [
      ["spend-by-day", ["2026-03-01", "2026-03-02"]],
      ["spend-by-provider", ["sandbox", "openai"]],
    ] as const) {
      const chart = screen.getByTestId(id);
      // A chart, drawn: its SVG surface with a bar for each line.
      expect(chart.querySelector(".recharts-surface")).not.toBeNull();
      expect(chart.querySelectorAll(".recharts-bar-rectangle").length).toBeGreaterThanOrEqual(keys.length);
      const rows = within(chart).getAllByRole("row").slice(1);
      expect(rows.map((r) => r.getAttribute("data-key"))).toEqual(keys);
    }
    const openai = screen.getByTestId("spend-by-provider").querySelector("[data-key=openai]");
    expect(openai?.textContent).toContain("0.050000001 USD");
    expect(screen.getByTestId("spend-total").textContent).toBe("Spent: 0.25 USD");
  });

  it("shows the money at risk now, whenever it was sent, with a link to the unknown jobs", async () => {
    const showUnknown = await open((by, since) => (since === null ? LEDGER[by] : nothing(by)));
    expect(screen.getByTestId("at-risk-amount").textContent).toBe("0.05 USD");
    fireEvent.change(screen.getByTestId("spend-since"), { target: { value: "2026-04-01" } });
    await settle();
    expect(spend).toHaveBeenCalledWith("day", "2026-04-01", null);
    expect(spend).toHaveBeenCalledWith("provider", "2026-04-01", null);
    expect(screen.getByTestId("spend-none-since").textContent).toContain("since 2026-04-01");
    // What is at risk now does not depend on the day chosen.
    expect(screen.getByTestId("at-risk-amount").textContent).toBe("0.05 USD");
    fireEvent.click(screen.getByTestId("show-unknown"));
    expect(showUnknown).toHaveBeenCalledOnce();
  });

  it("says nothing is at risk, with no link, when no attempt is unknown", async () => {
    const settled = (by: SpendBy): Spend => ({ ...LEDGER[by], total: { currency: "USD", spent: "0.25", at_risk: "0.00" } });
    await open(settled);
    expect(screen.getByTestId("at-risk-amount").textContent).toBe("0.00 USD");
    expect(screen.getByTestId("at-risk-now").textContent).toContain("No attempt is unknown.");
    expect(screen.queryByTestId("show-unknown")).toBeNull();
  });

  it("says how to start when no attempt has been charged", async () => {
    await open(nothing);
    expect(screen.getByTestId("spend-empty").textContent).toContain("No attempt has been charged yet: give a provider a price");
    expect(screen.queryByTestId("spend-by-day")).toBeNull();
    expect(screen.queryByTestId("at-risk-now")).toBeNull();
    expect(screen.queryByRole("alert")).toBeNull();
  });

  it("offers a choice of currency where attempts were charged in several, instead of failing", async () => {
    const eur = (by: SpendBy): Spend => ({
      by,
      lines: [{ key: by === "day" ? "2026-03-01" : "mistral", currency: "EUR", spent: "0.30", at_risk: "0.10" }],
      total: { currency: "EUR", spent: "0.30", at_risk: "0.10" },
    });
    await open((by, _since, currency) => {
      if (currency === null) return "attempts were charged in EUR, USD; name one currency, as amounts of two are never added";
      return currency === "EUR" ? eur(by) : LEDGER[by];
    });
    expect(screen.queryByRole("alert")).toBeNull();
    expect(screen.getByTestId("spend-currencies").textContent).toContain("EUR and USD");
    const choice = screen.getByTestId<HTMLSelectElement>("spend-currency");
    expect(Array.from(choice.options).map((o) => o.value)).toEqual(["EUR", "USD"]);
    expect(choice.value).toBe("EUR");
    expect(screen.getByTestId("at-risk-amount").textContent).toBe("0.10 EUR");

    fireEvent.change(choice, { target: { value: "USD" } });
    await settle();
    expect(spend).toHaveBeenCalledWith("day", null, "USD");
    expect(screen.getByTestId("at-risk-amount").textContent).toBe("0.05 USD");
    expect(screen.getByTestId("spend-by-provider").querySelector("[data-key=sandbox]")).not.toBeNull();
  });

  it("shows any other error as the engine named it", async () => {
    await open(() => "since: \"yesterday\" is not a time; write a date or an RFC 3339 time");
    expect(screen.getByRole("alert").textContent).toContain("is not a time");
    expect(screen.queryByTestId("spend-currency")).toBeNull();
  });
});
