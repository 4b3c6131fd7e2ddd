import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type JobView, type Known } from "../bindings";
import { attempt, jobView } from "../test/fixtures";
import { JobScreen } from "./JobScreen";

vi.mock("../bindings", async () => (await import("../test/bindings")).jobScreen());

const read = vi.mocked(commands.job);
const jobPart = vi.mocked(commands.jobPart);

afterEach(() => {
  cleanup();
  read.mockReset();
  jobPart.mockReset();
});

const SHA = "ab".repeat(32);

/** What the engine knows of attempt 1, as `onejob job ID` would print it. */
function known(over: Partial<Known> = {}): Known {
  return {
    attempt_id: "attempt-1",
    number: 1,
    provider: "sandbox",
    sent: {
      at: "2026-01-01T00:00:01Z",
      executor_id: "executor-host-7",
      method: "POST",
      url: "http://127.0.0.1:8080/charges",
      headers: { "content-type": "application/json", "idempotency-key": "job-1" },
      body_bytes: 12,
      body_sha256: SHA,
    },
    watched: true,
    received: {
      status: 502,
      headers: { "x-request-id": "req-502" },
      bytes: 10,
    },
    rule: { code: "http_5xx_without_key", says: "a 5xx from an http provider that does not honour Idempotency-Key" },
    tried: [
      { at: "2026-01-01T00:00:30Z", kind: "looked_up", actor: "executor", answer: { outcome: "still_unknown" } },
      { at: "2026-01-01T00:01:30Z", kind: "replayed", actor: "executor", answer: '{"status":503}' },
    ],
    ...over,
  };
}

/** An unknown job whose attempt 1 is unknown, with what is known of it. */
function view(what: Known[]): JobView {
  return jobView("unknown", { attempts: [{ ...attempt(1, "unknown"), sent_at: "2026-01-01T00:00:01Z" }], known: what });
}

async function open(data: JobView) {
  read.mockResolvedValue({ status: "ok", data });
  await act(async () => {
    render(<JobScreen id="job-1" now={Date.parse("2026-01-01T00:02:00Z")} back={() => undefined} />);
  });
}

describe("the What is known panel", () => {
  it("stands beside the three resolve actions with what was sent, what came back, the rule and the tries", async () => {
    await open(view([known()]));
    const panel = screen.getByTestId("what-is-known");
    // Beside the actions, in the same row.
    expect(panel.parentElement).toBe(screen.getByTestId("resolve").parentElement);
    expect(screen.getByTestId("resolve-succeeded")).toBeTruthy();
    expect(screen.getByTestId("resolve-failed")).toBeTruthy();
    expect(screen.getByTestId("resolve-abandoned")).toBeTruthy();

    expect(within(panel).getByTestId("known-rule").textContent).toContain("http_5xx_without_key");
    expect(within(panel).getByTestId("known-sent").textContent).toContain("executor-host-7");
    expect(within(panel).getByTestId("known-request").textContent).toContain("POST http://127.0.0.1:8080/charges");
    expect(within(panel).getByTestId("known-request-headers").textContent).toContain("idempotency-key: job-1");
    expect(within(panel).getByTestId("known-body").textContent).toContain(`12 B, SHA-256 ${SHA}`);
    const received = within(panel).getByTestId("known-received").textContent;
    expect(received).toContain("HTTP 502, 10 B of body received");
    expect(received).toContain("x-request-id: req-502");
    const tries = within(panel).getAllByTestId("known-try").map((li) => li.textContent);
    expect(tries).toHaveLength(2);
    expect(tries[0]).toContain('looked_up {"outcome":"still_unknown"}');
    expect(tries[1]).toContain('replayed {"status":503}');
    // The body is not read until asked for.
    expect(jobPart).not.toHaveBeenCalled();
  });

  it("shows the body sent with one click", async () => {
    await open(view([known()]));
    jobPart.mockResolvedValue({ status: "ok", data: { amount: 7 } });
    await act(async () => {
      fireEvent.click(screen.getByTestId("show-sent-body"));
    });
    expect(jobPart).toHaveBeenCalledExactlyOnceWith("job-1", { part: "sent_body", number: 1 });
    expect(screen.getByTestId("sent-body").textContent).toBe(JSON.stringify({ amount: 7 }, null, 2));
  });

  it("says plainly when nothing came back, and when nothing is known of what came back", async () => {
    await open(view([known({ received: null, watched: true, tried: [] })]));
    expect(screen.getByTestId("known-received").textContent).toBe("Nothing: no response arrived before the connection ended.");
    expect(screen.getByTestId("known-tried").textContent).toBe("None yet.");
    cleanup();

    await open(
      view([known({ received: null, watched: false, sent: null, rule: { code: "lease_expired", says: "found in flight with an expired lease" } })]),
    );
    expect(screen.getByTestId("known-received").textContent).toContain("Not known");
    expect(screen.getByTestId("known-sent").textContent).toContain("Not recorded");
    expect(screen.getByTestId("known-rule").textContent).toContain("lease_expired");
    expect(screen.queryByTestId("show-sent-body")).toBeNull();
  });

  it("is not shown when no attempt is unknown", async () => {
    const done = view([]);
    done.job.status = "succeeded";
    done.attempts = [attempt(1, "succeeded")];
    await open(done);
    expect(screen.queryByTestId("what-is-known")).toBeNull();
  });
});
