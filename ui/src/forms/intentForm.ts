// Submit by contract: the form's fields (the contract's {{fields}}, the route, the optional
// max_attempts and params) and the intent they make.
import type { ContractView, Value } from "../bindings";
import { parseJson } from "./contractForm";
import type { FieldErrors } from "./fields";

export interface IntentForm {
  contract: string;
  /** The text typed for each `{{field}}`, by its dotted path. */
  inputs: Record<string, string>;
  /** Provider names: primary first, then fallbacks. */
  route: string[];
  maxAttempts: string;
  /** A JSON object, or empty. */
  params: string;
}

/** Puts `value` at a dotted path (`a.b` → `{a: {b: value}}`), as the template reads it. */
function put(into: { [key: string]: Value }, path: string, value: Value) {
  const keys = path.split(".");
  let at = into;
  keys.forEach((key, i) => {
    if (i === keys.length - 1) {
      at[key] = value;
      return;
    }
    const next = at[key];
    const obj: { [key: string]: Value } = next !== null && typeof next === "object" && !Array.isArray(next) ? next : {};
    at[key] = obj;
    at = obj;
  });
}

/** The problems of the form's own fields, by field. */
export function checkIntentForm(form: IntentForm): FieldErrors {
  const errors: FieldErrors = {};
  if (form.route.length === 0) errors["route"] = "Pick at least one provider.";
  if (form.maxAttempts !== "" && !/^[1-9]\d*$/.test(form.maxAttempts)) {
    errors["max_attempts"] = "A whole number, at least 1, or empty for the default (5).";
  }
  if (form.params.trim() !== "") {
    const parsed = parseJson(form.params);
    if (!parsed.ok) errors["params"] = parsed.why;
    else if (parsed.value === null || typeof parsed.value !== "object" || Array.isArray(parsed.value)) {
      errors["params"] = 'A JSON object, such as {"temperature": 0}.';
    }
  }
  return errors;
}

/** The intent the form describes, as the JSON text a draft holds. */
export function intentOf(form: IntentForm, fields: readonly string[]): string {
  const input: { [key: string]: Value } = {};
  for (const field of fields) put(input, field, form.inputs[field] ?? "");
  const intent: { [key: string]: Value } = { route: form.route, input, contract: form.contract };
  if (/^[1-9]\d*$/.test(form.maxAttempts)) intent["max_attempts"] = Number(form.maxAttempts);
  const params = form.params.trim() === "" ? null : parseJson(form.params);
  if (params?.ok === true && params.value !== null && typeof params.value === "object" && !Array.isArray(params.value)) {
    intent["params"] = params.value;
  }
  return JSON.stringify(intent, null, 2);
}

/** Whether a job under `contract` may fail over to `provider` by itself: its last check of the contract passed and still counts. */
export function validated(contract: ContractView | null, provider: string): boolean {
  return contract?.checks.some((c) => c.provider === provider && c.passed && c.current) ?? false;
}
