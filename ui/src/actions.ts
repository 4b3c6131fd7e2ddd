// Which actions a job offers in its current state (SPEC §3, §4): only the valid ones.
import type { Attempt, JobStatus, Verdict } from "./bindings";

/** What recording a success risks, whatever it records. */
const SUCCESS_RISK = "if the provider did not in fact do it, the job shows a success that never happened.";

/** The words of a person's verdict on an unknown attempt: its button, what it risks, its confirmation. */
export const RESOLVE_WORDS: Record<Verdict, { label: string; risk: string; confirm: string }> = {
  succeeded: {
    label: "It went through",
    risk: `Records the result below as the job's one result; ${SUCCESS_RISK}`,
    confirm: "Record it as done",
  },
  failed: {
    label: "It did not happen",
    risk: "Marks this attempt failed so another may run; if it did go through, the work will be done, and paid for, twice.",
    confirm: "Mark it failed",
  },
  abandoned: {
    label: "Abandon and allow a new attempt",
    risk: "Stops waiting for this attempt so another may run; if it went through, the work may be done twice, and its late answer will be flagged for review.",
    confirm: "Abandon it",
  },
};

/** What "it went through" risks for many jobs at once, which record no result. */
export const SUCCEEDED_MANY_RISK = `Records each job as done, with no result; ${SUCCESS_RISK}`;

/** What cancelling a job risks. */
export const CANCEL_RISK =
  "Cancels the job for good; an answer already on its way is dropped and flagged for review, and the provider may still have done the work.";

/** What a person's retry risks: it starts a paid attempt now. */
export const RETRY_RISK =
  "Starts a new attempt now, which the provider may charge for; a job whose attempt is still open is left as it is.";

export interface Actions {
  cancel: boolean;
  /** The `unknown` attempt a person may resolve, if any. */
  resolve: Attempt | null;
  /** Whether a retry is possible at all (the job is not finished for good). */
  retry: boolean;
  /** Why a retry would be refused now, in words; null when it would run. */
  retryBlocked: string | null;
}

export function actionsFor({ job, attempts }: { job: { status: JobStatus }; attempts: Attempt[] }): Actions {
  const open = attempts.find((a) => a.state === "pending" || a.state === "in_flight" || a.state === "unknown") ?? null;
  const terminal = job.status === "succeeded" || job.status === "cancelled";
  return {
    cancel: !terminal,
    resolve: open !== null && open.state === "unknown" ? open : null,
    retry: !terminal,
    retryBlocked:
      open === null
        ? null
        : `Attempt #${open.number} is ${open.state.replace("_", " ")}: ${
            open.state === "unknown"
              ? "its request may have gone through, so another attempt could do the work twice. Resolve it first."
              : "only one attempt may be open at a time."
          }`,
  };
}
