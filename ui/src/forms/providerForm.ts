// The provider form's rules: which fields each kind has (the engine's closed set), what each
// means, the checks made before anything is sent, and the configuration it saves.
import type { KeyStatus, ProviderKind, ProviderView, Value } from "../bindings";
import { AMOUNT, CURRENCY, nameProblem, type FieldErrors } from "./fields";

/** Every field the form can show, as the configuration names it. */
export type ProviderField =
  | "name"
  | "kind"
  | "base_url"
  | "model"
  | "api_key_env"
  | "soft_timeout_ms"
  | "hard_timeout_ms"
  | "honours_idempotency_key"
  | "key_retention_s"
  | "status_url"
  | "context_window"
  | "supports_json_schema"
  | "tokenizer"
  | "anthropic_version"
  | "price_currency"
  | "price_per_request"
  | "price_per_1k_input_tokens"
  | "price_per_1k_output_tokens";

/** The price's fields, as the form names them, and as the configuration's `price` does. */
export const PRICE_PARTS = [
  ["price_currency", "currency"],
  ["price_per_request", "per_request"],
  ["price_per_1k_input_tokens", "per_1k_input_tokens"],
  ["price_per_1k_output_tokens", "per_1k_output_tokens"],
] as const;

/** What the form holds while it is edited: text as typed, checked before saving. */
export interface ProviderDraft {
  name: string;
  kind: ProviderKind;
  base_url: string;
  model: string;
  api_key_env: string;
  soft_timeout_ms: string;
  hard_timeout_ms: string;
  honours_idempotency_key: boolean;
  /** Seconds as typed; "" leaves it unset (never replayed). */
  key_retention_s: string;
  status_url: string;
  context_window: string;
  /** "" leaves it unset (the engine's default: on). */
  supports_json_schema: "" | "true" | "false";
  tokenizer: "" | "tiktoken" | "llama_tokenize";
  anthropic_version: string;
  /** The price (SPEC §17), as typed: decimal strings; all empty leaves the provider unpriced. */
  price_currency: string;
  price_per_request: string;
  price_per_1k_input_tokens: string;
  price_per_1k_output_tokens: string;
}

export const KINDS: readonly ProviderKind[] = ["openai", "anthropic", "http", "sandbox"];

const PRICED_BY_TOKENS: readonly ProviderField[] = ["price_currency", "price_per_request", "price_per_1k_input_tokens", "price_per_1k_output_tokens"];

/** The fields each kind has, in the order the form shows them. */
export const FIELDS: Record<ProviderKind, readonly ProviderField[]> = {
  openai: ["name", "kind", "base_url", "model", "api_key_env", "soft_timeout_ms", "hard_timeout_ms", "honours_idempotency_key", "key_retention_s", "status_url", "context_window", "supports_json_schema", "tokenizer", ...PRICED_BY_TOKENS],
  anthropic: ["name", "kind", "base_url", "model", "api_key_env", "soft_timeout_ms", "hard_timeout_ms", "honours_idempotency_key", "key_retention_s", "status_url", "context_window", "tokenizer", "anthropic_version", ...PRICED_BY_TOKENS],
  http: ["name", "kind", "base_url", "api_key_env", "soft_timeout_ms", "hard_timeout_ms", "honours_idempotency_key", "key_retention_s", "status_url", "price_currency", "price_per_request"],
  sandbox: ["name", "kind", "base_url", "soft_timeout_ms", "hard_timeout_ms", "honours_idempotency_key", "key_retention_s", "status_url", "context_window", ...PRICED_BY_TOKENS],
};

/** Whether a kind takes an API key (typed into the app, or from `api_key_env`). */
export function takesKey(kind: ProviderKind): boolean {
  return kind !== "sandbox";
}

/** Labels, in SPEC words. */
export const LABEL: Record<ProviderField, string> = {
  name: "Name",
  kind: "Kind",
  base_url: "Base URL",
  model: "Model",
  api_key_env: "API key variable",
  soft_timeout_ms: "Soft timeout (ms)",
  hard_timeout_ms: "Hard deadline (ms)",
  honours_idempotency_key: "Honours Idempotency-Key",
  key_retention_s: "Key retention (s)",
  status_url: "Status lookup URL",
  context_window: "Context window (tokens)",
  supports_json_schema: "JSON schema in response_format",
  tokenizer: "Tokenizer",
  anthropic_version: "anthropic-version",
  price_currency: "Price currency",
  price_per_request: "Price per request",
  price_per_1k_input_tokens: "Price per 1k input tokens",
  price_per_1k_output_tokens: "Price per 1k output tokens",
};

/** A few words on each field; some depend on the kind or on the value. */
export function explain(field: ProviderField, d: ProviderDraft): string {
  switch (field) {
    case "name":
      return "What routes call it: 1–64 of A–Z a–z 0–9 . _ -";
    case "kind":
      return {
        openai: "An OpenAI-compatible Chat Completions API.",
        anthropic: "The Anthropic Messages API.",
        http: "Any JSON-over-HTTP API: the job's input is the body, the JSON answer the result.",
        sandbox: "The built-in loopback provider with fault dials: it echoes a job's input, and answers a job with a contract as a model would.",
      }[d.kind];
    case "base_url":
      return {
        openai: "Includes /v1; requests go to {base_url}/chat/completions.",
        anthropic: "Requests go to {base_url}/v1/messages.",
        http: "Requests are POSTed here exactly as given. No user:pass@ and no secret in the query.",
        sandbox: "Empty: the sandbox runs inside the app.",
      }[d.kind];
    case "model":
      return "The model the provider is asked for.";
    case "api_key_env":
      return "The environment variable that holds the key (its name, never the key). A key in the keyring is used first.";
    case "soft_timeout_ms":
      return "After this long without an answer the attempt is unknown; the connection is kept, and an answer before the hard deadline still counts.";
    case "hard_timeout_ms":
      return "Then the connection is dropped; the attempt stays unknown until a person or a status lookup decides.";
    case "honours_idempotency_key":
      return d.honours_idempotency_key
        ? "On: the provider answers a repeat of the same Idempotency-Key with the first answer, so after a 5xx the same provider is tried again with the same key."
        : "Off: a 5xx or a timeout leaves the attempt unknown until a person decides.";
    case "key_retention_s":
      return "How long the provider remembers a key, in seconds; Stripe: 24 h (86400). Set, an unknown attempt is sent again with the same key after its hard deadline, until an answer settles it or this time (less a margin) has passed. Empty: never sent again. Only with Honours Idempotency-Key.";
    case "status_url":
      return "Where an unknown attempt's outcome is looked up; {base_url}, {idempotency_key}, {job_id}, {request_id} are filled in. Empty: a person resolves unknown attempts.";
    case "context_window":
      return "Tokens the model accepts; the contract check counts each prompt against it, and with a price per 1k output tokens it bounds an answer's worst case where a job gives no max_tokens (then it is required). Empty: not checked.";
    case "supports_json_schema":
      return "On (or unset): the contract's schema goes in response_format, strict. Off: JSON mode, with the schema in the system message.";
    case "tokenizer":
      return "How the contract check counts a prompt's tokens. Unset: OpenAI's encodings for OpenAI models, otherwise not checked.";
    case "anthropic_version":
      return "The anthropic-version header sent; empty: the default.";
    case "price_currency":
      return "The currency of the prices below: three capital letters (ISO 4217), such as USD or EUR. All price fields empty: the provider has no price.";
    case "price_per_request":
      return "Charged for every request sent, as a decimal such as 0.01 (at most 9 decimal places).";
    case "price_per_1k_input_tokens":
      return "Charged per thousand prompt tokens, such as 0.15, from the provider's price list.";
    case "price_per_1k_output_tokens":
      return "Charged per thousand output (completion) tokens, such as 0.60, from the provider's price list.";
  }
}

/** Where the key comes from, in words. */
export function keyText(key: KeyStatus | null): string {
  if (key === null) return "not set";
  switch (key.source) {
    case "keyring":
      return "key in keyring";
    case "env":
      return `from $${key.var}`;
    case "not_set":
      return key.required ? "not set (required)" : "not set";
  }
}

const text = (v: Value | undefined): string => (typeof v === "string" ? v : typeof v === "number" ? String(v) : "");

/** The form for a new provider of a kind, or for editing a configured one. */
export function draftOf(view: ProviderView | null): ProviderDraft {
  if (view === null) {
    return {
      name: "",
      kind: "openai",
      base_url: "",
      model: "",
      api_key_env: "",
      soft_timeout_ms: "30000",
      hard_timeout_ms: "120000",
      honours_idempotency_key: false,
      key_retention_s: "",
      status_url: "",
      context_window: "",
      supports_json_schema: "",
      tokenizer: "",
      anthropic_version: "",
      price_currency: "",
      price_per_request: "",
      price_per_1k_input_tokens: "",
      price_per_1k_output_tokens: "",
    };
  }
  const config = objectOf(view.config);
  const price = objectOf(config["price"] ?? null);
  const flag = config["supports_json_schema"];
  const tokenizer = config["tokenizer"];
  return {
    name: view.name,
    kind: view.kind,
    base_url: view.base_url ?? "",
    model: view.model ?? "",
    api_key_env: view.api_key_env ?? "",
    soft_timeout_ms: String(view.soft_timeout_ms),
    hard_timeout_ms: String(view.hard_timeout_ms),
    honours_idempotency_key: view.honours_idempotency_key,
    key_retention_s: text(config["key_retention_s"]),
    status_url: view.status_url ?? "",
    context_window: view.context_window === null ? "" : String(view.context_window),
    supports_json_schema: flag === true ? "true" : flag === false ? "false" : "",
    tokenizer: tokenizer === "tiktoken" || tokenizer === "llama_tokenize" ? tokenizer : "",
    anthropic_version: text(config["anthropic_version"]),
    price_currency: text(price["currency"]),
    price_per_request: text(price["per_request"]),
    price_per_1k_input_tokens: text(price["per_1k_input_tokens"]),
    price_per_1k_output_tokens: text(price["per_1k_output_tokens"]),
  };
}

/** A JSON object's fields, or none for anything else. */
export function objectOf(value: Value): { [key: string]: Value } {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value : {};
}

const WHOLE = /^\d+$/;
/** The longest key retention the engine accepts: a year. */
export const MAX_KEY_RETENTION_S = 365 * 24 * 3600;
const SECRET_PARAM = /^(key|api_key|apikey|api-key|token|access_token|secret|password|sig|signature|auth|authorization)$/i;

/** What is wrong with a URL field, or null. Mirrors the engine's rules that need no server. */
export function urlProblem(url: string, template = false): string | null {
  const probe = template && url.startsWith("{base_url}") ? `http://base-url.invalid${url.slice(10)}` : url;
  let parsed: URL;
  try {
    parsed = new URL(probe.replace(/\{[a-z_]+\}/g, "x"));
  } catch {
    return "Not a URL: write it as http://host/path or https://host/path.";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return "Use http:// or https://.";
  if (parsed.username !== "" || parsed.password !== "") {
    return "No user:pass@ in the URL: keys go in the keyring or an environment variable.";
  }
  for (const name of parsed.searchParams.keys()) {
    if (SECRET_PARAM.test(name)) return `No secret in the query (${name}=…): keys go in the keyring or an environment variable.`;
  }
  return null;
}

/** The problems found before anything is sent, by field; empty when the form may be saved. */
export function checkProvider(d: ProviderDraft): FieldErrors {
  const errors: FieldErrors = {};
  const fields = FIELDS[d.kind];
  const name = nameProblem(d.name);
  if (name !== null) errors["name"] = name;
  if (d.base_url.trim() === "") {
    if (d.kind !== "sandbox") errors["base_url"] = "Required for this kind.";
  } else {
    const why = urlProblem(d.base_url.trim());
    if (why !== null) errors["base_url"] = why;
  }
  if (fields.includes("status_url") && d.status_url.trim() !== "") {
    const why = urlProblem(d.status_url.trim(), true);
    if (why !== null) errors["status_url"] = why;
  }
  if (!WHOLE.test(d.soft_timeout_ms) || Number(d.soft_timeout_ms) < 1) {
    errors["soft_timeout_ms"] = "A whole number of milliseconds, at least 1.";
  }
  if (!WHOLE.test(d.hard_timeout_ms)) {
    errors["hard_timeout_ms"] = "A whole number of milliseconds.";
  } else if (errors["soft_timeout_ms"] === undefined && Number(d.hard_timeout_ms) < Number(d.soft_timeout_ms)) {
    errors["hard_timeout_ms"] = "The hard deadline comes after the soft timeout: make it at least as long.";
  }
  if (fields.includes("key_retention_s") && d.key_retention_s !== "") {
    if (!WHOLE.test(d.key_retention_s) || Number(d.key_retention_s) < 1 || Number(d.key_retention_s) > MAX_KEY_RETENTION_S) {
      errors["key_retention_s"] = `A whole number of seconds from 1 to ${MAX_KEY_RETENTION_S}, or empty.`;
    } else if (!d.honours_idempotency_key) {
      errors["key_retention_s"] = "Only for a provider that honours Idempotency-Key: turn that on, or leave this empty.";
    }
  }
  if (fields.includes("context_window") && d.context_window !== "" && (!WHOLE.test(d.context_window) || Number(d.context_window) < 1)) {
    errors["context_window"] = "A whole number of tokens, or empty.";
  }
  if (fields.includes("api_key_env") && d.api_key_env !== "" && !/^[A-Za-z0-9_]+$/.test(d.api_key_env)) {
    errors["api_key_env"] = "The name of an environment variable (A–Z a–z 0–9 _), not the key.";
  }
  if (fields.includes("model") && d.model.trim() === "" && (d.kind === "openai" || d.kind === "anthropic")) {
    errors["model"] = "Required for this kind.";
  }
  const amounts = PRICE_PARTS.filter(([field]) => field !== "price_currency" && fields.includes(field));
  for (const [field] of amounts) {
    const typed = d[field].trim();
    if (typed !== "" && !AMOUNT.test(typed)) {
      errors[field] = "A decimal such as 0.15: digits and at most one point, at most 9 decimal places, or empty.";
    }
  }
  const priced = amounts.some(([field]) => d[field].trim() !== "");
  const currency = d.price_currency.trim();
  if (currency !== "" && !CURRENCY.test(currency)) {
    errors["price_currency"] = "Three capital letters, such as USD or EUR.";
  } else if (priced && currency === "") {
    errors["price_currency"] = "Required with a price: the currency the amounts are in, such as USD.";
  } else if (!priced && currency !== "") {
    errors["price_currency"] = "A currency without any amount: give at least one price below, or leave this empty.";
  }
  return errors;
}

/**
 * The configuration to save: the kind's fields that are set, on top of what the stored
 * configuration holds that the form does not show (the sandbox's dials).
 */
export function configOf(d: ProviderDraft, stored: Value | null): { [key: string]: Value } {
  const fields = FIELDS[d.kind];
  const config: { [key: string]: Value } = {};
  const kept = objectOf(stored ?? null)["dials"];
  if (d.kind === "sandbox" && kept !== undefined) config["dials"] = kept;
  const put = (field: ProviderField, value: Value) => {
    if (fields.includes(field)) config[field] = value;
  };
  put("name", d.name);
  put("kind", d.kind);
  if (d.base_url.trim() !== "") put("base_url", d.base_url.trim());
  if (d.model.trim() !== "") put("model", d.model.trim());
  if (d.api_key_env !== "") put("api_key_env", d.api_key_env);
  put("soft_timeout_ms", Number(d.soft_timeout_ms));
  put("hard_timeout_ms", Number(d.hard_timeout_ms));
  put("honours_idempotency_key", d.honours_idempotency_key);
  if (d.key_retention_s !== "") put("key_retention_s", Number(d.key_retention_s));
  if (d.status_url.trim() !== "") put("status_url", d.status_url.trim());
  if (d.context_window !== "") put("context_window", Number(d.context_window));
  if (d.supports_json_schema !== "") put("supports_json_schema", d.supports_json_schema === "true");
  if (d.tokenizer !== "") put("tokenizer", d.tokenizer);
  if (d.anthropic_version.trim() !== "") put("anthropic_version", d.anthropic_version.trim());
  const price: { [key: string]: Value } = {};
  for (const [field, part] of PRICE_PARTS) {
    if (fields.includes(field) && d[field].trim() !== "") price[part] = d[field].trim();
  }
  if (Object.keys(price).length > 0) config["price"] = price;
  return config;
}
