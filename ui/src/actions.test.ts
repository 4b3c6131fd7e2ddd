import { describe, expect, it } from "vitest";

import { actionsFor } from "./actions";
import type { AttemptState, JobStatus } from "./bindings";
import { attempt, job } from "./test/fixtures";

const detail = (status: JobStatus, states: AttemptState[]) => ({
  job: job("job-1", status),
  attempts: states.map((s, k) => attempt(k + 1, s)),
  events: [],
  usage: null,
  known: [],
});

describe("the actions a job offers", () => {
  it("a queued job with no attempt: cancel and retry", () => {
    expect(actionsFor(detail("queued", []))).toEqual({ cancel: true, resolve: null, retry: true, retryBlocked: null });
  });

  it.each(["pending", "in_flight"] as const)("an attempt %s blocks a retry and offers no resolve", (state) => {
    const a = actionsFor(detail("running", [state]));
    expect(a.cancel).toBe(true);
    expect(a.resolve).toBeNull();
    expect(a.retryBlocked).toMatch(/only one attempt may be open/);
  });

  it("an unknown attempt can be resolved, and blocks a retry saying why", () => {
    const a = actionsFor(detail("unknown", ["failed", "unknown"]));
    expect(a.resolve?.number).toBe(2);
    expect(a.retryBlocked).toMatch(/Attempt #2 is unknown: .*may have gone through/);
  });

  it.each(["succeeded", "cancelled"] as const)("a %s job offers neither cancel nor retry", (status) => {
    const a = actionsFor(detail(status, ["succeeded"]));
    expect(a.cancel).toBe(false);
    expect(a.retry).toBe(false);
  });

  it("a failed job may be retried by a person", () => {
    const a = actionsFor(detail("failed", ["failed", "abandoned", "lost"]));
    expect(a).toEqual({ cancel: true, resolve: null, retry: true, retryBlocked: null });
  });
});
