// Which actions a job offers in its current state (SPEC §3, §4): only the valid ones.
import type { Attempt, JobStatus } from "./bindings";

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
