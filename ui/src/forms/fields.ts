// What the forms share: the rules for a name, an amount and a currency, and which field an engine
// error names.
import type { Shown } from "../errors";

/** Provider and contract names (the engine's rule): 1–64 characters of A-Z a-z 0-9 . _ - */
export const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** An amount as the engine reads one: digits, at most one point, at most nine decimal places. */
export const AMOUNT = /^(\d+(\.\d{0,9})?|\.\d{1,9})$/;

/** A currency's code: three capital letters (ISO 4217). */
export const CURRENCY = /^[A-Z]{3}$/;

/** Says what is wrong with a name, or null when it is one. */
export function nameProblem(name: string): string | null {
  if (name === "") return "Required.";
  return NAME.test(name) ? null : "Use 1–64 characters of A–Z a–z 0–9 . _ -";
}

/** Errors to show, by field; `form` holds what belongs to no one field. */
export type FieldErrors = Partial<Record<string, string>>;

/**
 * Where an engine error goes: `invalid_input` naming `provider.base_url` goes beside
 * `base_url` (the first segment after the prefix: `contract.samples.2` → `samples`), when the
 * form shows that field; anything else goes to the form as a whole.
 */
export function placeError(error: Shown, prefix: string, shownFields: readonly string[]): FieldErrors {
  const named = error.code === "invalid_input" ? error.details?.["field"] : undefined;
  if (typeof named === "string" && named.startsWith(`${prefix}.`)) {
    const rest = named.slice(prefix.length + 1);
    // A part of a nested field (`provider.price.currency`) shown as a field of its own.
    const flat = rest.replace(/\./g, "_");
    if (shownFields.includes(flat)) return { [flat]: error.message };
    const field = rest.split(".")[0] ?? "";
    if (shownFields.includes(field)) return { [field]: error.message };
  }
  return { form: `${error.code}: ${error.message}` };
}

/** Whether a set of errors has any. */
export function hasErrors(errors: FieldErrors): boolean {
  return Object.values(errors).some((e) => e !== undefined);
}
