// The budget form's rules (SPEC §17): its fields, what each means, the checks made before
// anything is sent, and the JSON it sets.
import type { Budget, BudgetPeriod } from "../bindings";
import { AMOUNT, CURRENCY, nameProblem, type FieldErrors } from "./fields";

/** What the form holds while it is edited: text as typed, checked before saving. */
export interface BudgetDraft {
  name: string;
  /** A decimal string, as typed. */
  limit: string;
  currency: string;
  period: BudgetPeriod;
  /** "" for every provider. */
  provider: string;
  /** "" for every owner's jobs. */
  owner: string;
}

export type BudgetField = keyof BudgetDraft;

/** The fields in the order the form shows them. */
export const BUDGET_FIELDS: readonly BudgetField[] = ["name", "limit", "currency", "period", "provider", "owner"];

export const BUDGET_LABEL: Record<BudgetField, string> = {
  name: "Name",
  limit: "Limit",
  currency: "Currency",
  period: "Period",
  provider: "Provider",
  owner: "Owner",
};

/** One line on each field. */
export const BUDGET_HINT: Record<BudgetField, string> = {
  name: "What the budget is called, and what a job kept back by it names: 1–64 of A–Z a–z 0–9 . _ -",
  limit: "What the attempts it covers may spend in a period, as a decimal such as 10.00; one that would pass it is not sent.",
  currency: "Three capital letters (ISO 4217), such as USD: only attempts priced in it count.",
  period: "The UTC day or month it counts in; a job kept back waits for the next one.",
  provider: "Only attempts sent to this provider, or every provider's.",
  owner: "Only this owner's jobs (the window submits as local); empty: every owner's.",
};

/** An owner id, as the engine reads one. */
const OWNER = /^[A-Za-z0-9._@-]{1,128}$/;

/** The form for a new budget, or for setting a listed one again. */
export function draftOfBudget(budget: Budget | null): BudgetDraft {
  if (budget === null) return { name: "", limit: "", currency: "USD", period: "day", provider: "", owner: "" };
  return {
    name: budget.name,
    limit: budget.limit,
    currency: budget.currency,
    period: budget.period,
    provider: budget.provider ?? "",
    owner: budget.owner ?? "",
  };
}

/** The problems found before anything is sent, by field; empty when the form may be saved. */
export function checkBudget(d: BudgetDraft): FieldErrors {
  const errors: FieldErrors = {};
  const name = nameProblem(d.name);
  if (name !== null) errors["name"] = name;
  const limit = d.limit.trim();
  if (limit === "") errors["limit"] = "Required: what may be spent in a period, such as 10.00.";
  else if (!AMOUNT.test(limit)) errors["limit"] = "A decimal such as 10.00: digits and at most one point, at most 9 decimal places.";
  if (!CURRENCY.test(d.currency.trim())) errors["currency"] = "Three capital letters, such as USD or EUR.";
  const owner = d.owner.trim();
  if (owner !== "" && !OWNER.test(owner)) errors["owner"] = "An owner id: 1–128 of A–Z a–z 0–9 . _ @ -, or empty for every owner.";
  return errors;
}

/** The budget's JSON, as `onejob budget set NAME --json` takes it. */
export function budgetJson(d: BudgetDraft): string {
  const provider = d.provider === "" ? {} : { provider: d.provider };
  const owner = d.owner.trim() === "" ? {} : { owner: d.owner.trim() };
  return JSON.stringify({ limit: d.limit.trim(), currency: d.currency.trim(), period: d.period, ...provider, ...owner });
}
