// The Jobs list's filter (SPEC §13, §16): status, search, provider, the open attempt's error
// kind, and when the jobs were created. The list, its count and "Select all N matching" take
// the one filter the person chose, as the backend's `BulkFilter`, so an action on every
// matching job acts on exactly the jobs the list shows.
import type { BulkFilter, JobStatus } from "./bindings";

/** The filter as a person sets it on the Jobs screen, each field as typed. */
export interface Chosen {
  status: JobStatus | null;
  search: string;
  provider: string | null;
  /** The open attempt's error kind, e.g. `soft_timeout`. */
  errorKind: string;
  /** A `datetime-local` field's value: the person's local time, `YYYY-MM-DDTHH:MM`. */
  createdAfter: string;
  createdBefore: string;
}

/**
 * The error kinds that leave an attempt `unknown` (SPEC §6): what the error kind field
 * suggests. Any other kind may still be typed.
 */
export const UNKNOWN_KINDS = [
  "soft_timeout",
  "timeout",
  "connection_broken",
  "cut_off",
  "server_error_unknown",
  "invalid_answer_unknown",
  "answer_too_large",
  "lease_expired",
] as const;

/** A time as a `datetime-local` field holds it (local), in RFC 3339 UTC; null when blank or not a time. */
export function utcOf(local: string): string | null {
  const text = local.trim();
  if (text === "") return null;
  // Date and time without an offset are read as local time.
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? null : at.toISOString();
}

/** The filter as the backend takes it: a blank term is null, a time is UTC. */
export function filterOf(chosen: Chosen): BulkFilter {
  const text = (t: string) => (t.trim() === "" ? null : t.trim());
  return {
    status: chosen.status,
    search: text(chosen.search),
    provider: chosen.provider,
    error_kind: text(chosen.errorKind),
    created_after: utcOf(chosen.createdAfter),
    created_before: utcOf(chosen.createdBefore),
  };
}

/** Every job: no term set. */
export const EVERY_JOB: BulkFilter = filterOf({
  status: null,
  search: "",
  provider: null,
  errorKind: "",
  createdAfter: "",
  createdBefore: "",
});

/** Whether the filter narrows the list at all. */
export function narrows(filter: BulkFilter | null): boolean {
  return filter !== null && Object.values(filter).some((v) => v !== null && v !== undefined);
}

/** The filter's terms in words, for a list that shows none: "unknown jobs at sandbox …". */
export function describe(filter: BulkFilter): string {
  const words = [`No ${filter.status ?? ""}`.trimEnd(), "jobs"];
  if (filter.provider) words.push(`on ${filter.provider}`);
  if (filter.error_kind) words.push(`whose open attempt is ${filter.error_kind}`);
  if (filter.created_after) words.push(`created after ${new Date(filter.created_after).toLocaleString()}`);
  if (filter.created_before) words.push(`${filter.created_after ? "and" : "created"} before ${new Date(filter.created_before).toLocaleString()}`);
  if (filter.search) words.push(`matching “${filter.search}”`);
  return `${words.join(" ")}.`;
}
