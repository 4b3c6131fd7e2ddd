import { describe, expect, it } from "vitest";

import { shown } from "./errors";
import { explain } from "./screens/SubmitScreen";

describe("errors in words", () => {
  it("a conflict names the job that holds the key", () => {
    const error = shown({
      code: "idempotency_conflict",
      message: "the key is taken by a job with another intent",
      details: { existing_job_id: "0190-abc" },
    });
    expect(explain(error)).toMatch(/belongs to job 0190-abc/);
    expect(explain(error)).toMatch(/Edit the intent/);
  });

  it("an invalid intent says what is wrong", () => {
    const error = shown({ code: "invalid_input", message: "intent: not valid JSON", details: { field: "intent" } });
    expect(explain(error)).toBe("The intent is not valid: intent: not valid JSON");
  });

  it("anything else keeps its code", () => {
    expect(explain(shown({ code: "storage", message: "disk full", details: { kind: "failed" } }))).toBe("storage: disk full");
  });

  it("a failure without the engine's shape is an ipc error", () => {
    expect(shown("no bridge")).toEqual({ code: "ipc", message: "no bridge" });
  });
});
