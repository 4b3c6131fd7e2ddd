// Money as the backend gives it (SPEC §17): amounts are exact decimal strings ("0.15"), shown
// as they come and never added up here; the ledger adds them exactly. Only a chart turns one
// into a number, to place a bar.
import type { Cost } from "./bindings";

/** Whether an amount is zero ("0.00"), read from its digits, not as a number. */
export function isZero(amount: string): boolean {
  return /^[0.]*$/.test(amount);
}

/** "0.15 USD". */
export function money(amount: string, currency: string): string {
  return `${amount} ${currency}`;
}

/** "0.15 USD spent", "0.15 USD spent, 0.05 USD at risk", "0.05 USD at risk". */
export function costWords(cost: Cost): string {
  const spent = `${money(cost.spent, cost.currency)} spent`;
  const risk = `${money(cost.at_risk, cost.currency)} at risk`;
  if (isZero(cost.at_risk)) return spent;
  return isZero(cost.spent) ? risk : `${spent}, ${risk}`;
}

/** An amount as a number, for a chart to place a bar: never shown, never added. */
export function plotted(amount: string): number {
  const n = Number(amount);
  return Number.isFinite(n) ? n : 0;
}

/**
 * The currencies an error of spend names when attempts were charged in several and none was
 * chosen ("attempts were charged in EUR, USD; name one currency …"); empty for any other error.
 */
export function currenciesNamed(error: { code: string; message: string } | null): string[] {
  if (error === null || error.code !== "invalid_input") return [];
  const named = /charged in ([A-Z]{3}(?:, [A-Z]{3})+)/.exec(error.message);
  return named === null ? [] : (named[1] ?? "").split(", ");
}

/** The digits of an amount ("0.15") as its whole part without leading zeros and its decimals. */
function digits(amount: string): [string, string] {
  const [whole = "", decimals = ""] = amount.split(".");
  return [whole.replace(/^0+/, ""), decimals.replace(/0+$/, "")];
}

/** Whether amount `a` is at least `b`, read exactly from their digits, never as numbers. */
export function atLeast(a: string, b: string): boolean {
  const [aWhole, aDecimals] = digits(a);
  const [bWhole, bDecimals] = digits(b);
  if (aWhole.length !== bWhole.length) return aWhole.length > bWhole.length;
  if (aWhole !== bWhole) return aWhole > bWhole;
  const width = Math.max(aDecimals.length, bDecimals.length);
  return aDecimals.padEnd(width, "0") >= bDecimals.padEnd(width, "0");
}

/** How much of `limit` `used` is, from 0 to 1, for a bar to show: never shown as an amount. */
export function filled(used: string, limit: string): number {
  const whole = plotted(limit);
  if (whole <= 0) return atLeast(used, limit) ? 1 : 0;
  return Math.min(1, Math.max(0, plotted(used) / whole));
}
