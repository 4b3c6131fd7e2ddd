// The job statuses of SPEC §3, in the order a job passes through them, with their meanings.
import type { JobStatus } from "./bindings";

/** Every job status, in the order the filter lists them. */
export const STATUSES: readonly JobStatus[] = [
  "queued",
  "running",
  "unknown",
  "succeeded",
  "failed",
  "cancelled",
];

/** One line per status, from SPEC §3, shown on hover. */
export const MEANING: Record<JobStatus, string> = {
  queued: "No open attempt; the executor will start one.",
  running: "An attempt is pending or in flight.",
  unknown: "The open attempt's outcome is unknown; a person must resolve it.",
  succeeded: "An answer won; this is the job's one result.",
  failed: "No further automatic attempt; a person may retry it.",
  cancelled: "A person cancelled it; no attempt may start.",
};
