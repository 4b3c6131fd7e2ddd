// Jobs and attempts for the component tests, with only the fields a test cares about set.
import type { Attempt, AttemptState, Job, JobStatus, JobSummary, JobView, Settings } from "../bindings";

export function job(id: string, status: JobStatus = "queued"): Job {
  return {
    id,
    owner_id: "local",
    idempotency_key: `key-${id}`,
    fingerprint: "0".repeat(64),
    intent: { route: ["sandbox"], input: {} },
    status,
    version: 1,
    completed_by: null,
    result: null,
    error: null,
    flagged_for_review: false,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    finished_at: null,
    not_before: null,
  };
}

/** A job as the Jobs list receives it. */
export function summary(id: string, status: JobStatus = "queued"): JobSummary {
  return {
    id,
    owner_id: "local",
    idempotency_key: `key-${id}`,
    status,
    version: 1,
    route: ["sandbox"],
    flagged_for_review: false,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    finished_at: null,
  };
}

export function attempt(number: number, state: AttemptState): Attempt {
  return {
    id: `attempt-${number}`,
    job_id: "job-1",
    number,
    provider: "sandbox",
    state,
    job_version: 1,
    request_id: null,
    http_status: null,
    error: null,
    executor_id: null,
    lease_expires_at: null,
    flagged_for_review: false,
    created_at: "2026-01-01T00:00:00Z",
    sent_at: null,
    finished_at: null,
    usage: null,
  };
}

/** The Job screen's data for job-1 of `status`, its intent whole and no result, with `over` changed. */
export function jobView(status: JobStatus, over: Partial<JobView> = {}): JobView {
  const { intent, result: _, ...rest } = job("job-1", status);
  return {
    job: { ...rest, intent: { shown: "whole", value: intent }, result: null },
    attempts: [],
    events: [],
    usage: null,
    cost: [],
    known: [],
    ...over,
  };
}

/** What the Settings command answers for a default file ledger, with `over` changed. */
export function settings(over: Partial<Settings> = {}): Settings {
  return {
    db_path: "/data/onejob.db",
    open: true,
    shared: false,
    source: "default",
    next_start: null,
    owner: "local",
    concurrency: 32,
    ...over,
  };
}
