// A Submit draft (SPEC §13): its idempotency key is made when the draft starts and kept for
// every click; after a submit, only an intent of another fingerprint gets a new key, and an
// intent rewritten back to the submitted one goes back to the submitted key.
import type { JobStatus } from "./bindings";
import type { Shown } from "./errors";
import type { IntentForm } from "./forms/intentForm";

/** What a new window's draft starts with: a job for the built-in sandbox. */
export const TEMPLATE = `{
  "route": ["sandbox"],
  "input": {"prompt": "Say hello"}
}`;

/** What one click on Submit came to, under the key it was sent with. */
export type Outcome =
  | { click: number; key: string; kind: "submitted" | "replayed"; job: { id: string; status: JobStatus } }
  | { click: number; key: string; kind: "error"; error: Shown };

/** The last intent sent, by its fingerprint, and the key it was sent with. */
export interface SubmittedPair {
  key: string;
  fingerprint: string;
}

/** One form draft: what is written, its key, and what its clicks came to. */
export interface Draft {
  key: string;
  /** The intent's JSON text, as submitted. */
  intent: string;
  /** The submit-by-contract form; its contract is empty when the intent is written as JSON. */
  form: IntentForm;
  /** Whether the JSON is shown beside the contract form. */
  showJson: boolean;
  /** The last submitted pair; null until the first click. */
  submitted: SubmittedPair | null;
  /** How many times Submit was clicked: each click's number orders the outcomes. */
  clicks: number;
  /** The answers of this draft's clicks, in click order. */
  outcomes: Outcome[];
}

/** The most outcomes a draft keeps: a history to read back, not a log. */
const KEPT_OUTCOMES = 50;

export const EMPTY_FORM: IntentForm = { contract: "", inputs: {}, route: [], maxAttempts: "", params: "" };

/** A fresh key: random, printable ASCII, unique per draft. */
export function newKey(): string {
  return `draft-${crypto.randomUUID()}`;
}

export function startDraft(intent: string = TEMPLATE, key: string = newKey()): Draft {
  return { key, intent, form: EMPTY_FORM, showJson: false, submitted: null, clicks: 0, outcomes: [] };
}

/**
 * The draft once its intent's fingerprint is known (null: not a valid intent, which decides
 * nothing). Before a submit the key stays; after one, the submitted intent gets the submitted
 * key back and any other intent a key never sent.
 */
export function keyed(draft: Draft, fingerprint: string | null, key: () => string = newKey): Draft {
  const last = draft.submitted;
  if (last === null || fingerprint === null) return draft;
  if (fingerprint === last.fingerprint) return draft.key === last.key ? draft : { ...draft, key: last.key };
  // A key other than the submitted one was never sent, so the new intent keeps it.
  return draft.key === last.key ? { ...draft, key: key() } : draft;
}

/** The draft after a click on Submit of an intent with this fingerprint: its key is now the submitted one. */
export function clicked(draft: Draft, fingerprint: string, key: () => string = newKey): Draft {
  const d = keyed(draft, fingerprint, key);
  return { ...d, submitted: { key: d.key, fingerprint } };
}

/** The draft with one more click's outcome, in click order; only the keys still reachable keep theirs. */
export function answered(draft: Draft, outcome: Outcome): Draft {
  const live = new Set([draft.key, draft.submitted?.key]);
  const outcomes = [...draft.outcomes, outcome]
    .filter((o) => live.has(o.key))
    .sort((a, b) => a.click - b.click)
    .slice(-KEPT_OUTCOMES);
  return { ...draft, outcomes };
}

/** The outcomes to show: those of the key the next click sends. */
export function shownOutcomes(draft: Draft): Outcome[] {
  return draft.outcomes.filter((o) => o.key === draft.key);
}

/** "New draft": the same text under a new key, with nothing submitted yet. */
export function renewed(draft: Draft, key: string = newKey()): Draft {
  return { ...draft, key, submitted: null, outcomes: [] };
}

/** A draft read back from storage, or null when it is not one (another version, damaged). */
export function asDraft(value: unknown): Draft | null {
  if (!isObject(value)) return null;
  const { key, intent, form, showJson, submitted, clicks, outcomes } = value;
  if (typeof key !== "string" || typeof intent !== "string" || typeof showJson !== "boolean") return null;
  if (typeof clicks !== "number" || !Array.isArray(outcomes) || !isForm(form)) return null;
  if (submitted !== null && !(isObject(submitted) && typeof submitted["key"] === "string" && typeof submitted["fingerprint"] === "string")) {
    return null;
  }
  if (!outcomes.every(isOutcome)) return null;
  return value as unknown as Draft;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isForm(value: unknown): value is IntentForm {
  return (
    isObject(value) &&
    typeof value["contract"] === "string" &&
    isObject(value["inputs"]) &&
    Object.values(value["inputs"]).every((v) => typeof v === "string") &&
    Array.isArray(value["route"]) &&
    value["route"].every((p) => typeof p === "string") &&
    typeof value["maxAttempts"] === "string" &&
    typeof value["params"] === "string"
  );
}

function isOutcome(value: unknown): value is Outcome {
  if (!isObject(value) || typeof value["click"] !== "number" || typeof value["key"] !== "string") return false;
  if (value["kind"] === "error") {
    const error = value["error"];
    return isObject(error) && typeof error["code"] === "string" && typeof error["message"] === "string";
  }
  const job = value["job"];
  return (
    (value["kind"] === "submitted" || value["kind"] === "replayed") &&
    isObject(job) &&
    typeof job["id"] === "string" &&
    typeof job["status"] === "string"
  );
}
