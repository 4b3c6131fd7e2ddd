import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type JobView, type ShownValue, type Value } from "../bindings";
import { jobView } from "../test/fixtures";
import { JobScreen } from "./JobScreen";

vi.mock("../bindings", async () => (await import("../test/bindings")).jobScreen());

const read = vi.mocked(commands.job);
const jobPart = vi.mocked(commands.jobPart);
const saveJobPart = vi.mocked(commands.saveJobPart);

afterEach(() => {
  cleanup();
  read.mockReset();
  jobPart.mockReset();
  saveJobPart.mockReset();
});

/** A result of about 5 MB whose last row says so. */
const large: Value = { rows: Array.from({ length: 50_000 }, (_, i) => ({ row: i, text: `row-${i} ${"x".repeat(80)}` })) };
const whole = JSON.stringify(large, null, 2);
const firstPart = whole.slice(0, whole.lastIndexOf("\n", 4096));

/** The Job screen's data for one succeeded job with this result and one event of this detail. */
function view(result: ShownValue, detail: ShownValue = { shown: "whole", value: { attempt: 1 } }): JobView {
  const shown = jobView("succeeded", {
    events: [{ attempt_id: null, at: "2026-01-01T00:00:00Z", kind: "succeeded", actor: "executor", detail }],
  });
  return { ...shown, job: { ...shown.job, result } };
}

async function open(data: JobView) {
  read.mockResolvedValue({ status: "ok", data });
  await act(async () => {
    render(<JobScreen id="job-1" now={Date.parse("2026-01-01T00:01:00Z")} back={() => undefined} />);
  });
}

describe("a large value on the Job screen", () => {
  it("shows a large result's size and first part, not the whole, until 'show all' reads it", async () => {
    await open(view({ shown: "large", size: whole.length, first_part: firstPart }));

    const shown = screen.getByTestId("large-result");
    expect(shown.querySelector("[data-testid=large-size]")?.textContent).toBe(`${(whole.length / 1048576).toFixed(1)} MiB`);
    expect(shown.querySelector("[data-testid=first-part]")?.textContent).toContain(firstPart);
    expect(document.body.textContent).not.toContain("row-49999");
    expect(document.body.textContent?.length).toBeLessThan(64 * 1024);
    expect(jobPart).not.toHaveBeenCalled();

    jobPart.mockResolvedValue({ status: "ok", data: large });
    await act(async () => {
      fireEvent.click(screen.getByTestId("show-all"));
    });
    expect(jobPart).toHaveBeenCalledExactlyOnceWith("job-1", { part: "result" });
    expect(screen.getByTestId("job-result").textContent).toBe(whole);
    expect(screen.queryByTestId("show-all")).toBeNull();
  });

  it("saves a large result to a file when asked, and says where", async () => {
    await open(view({ shown: "large", size: whole.length, first_part: firstPart }));
    saveJobPart.mockResolvedValue({ status: "ok", data: { path: "/home/me/Downloads/onejob-job-1-result.json", size: whole.length } });
    await act(async () => {
      fireEvent.click(screen.getByTestId("save-to-file"));
    });
    expect(saveJobPart).toHaveBeenCalledExactlyOnceWith("job-1", { part: "result" });
    expect(screen.getByTestId("saved-to").textContent).toBe("Saved to /home/me/Downloads/onejob-job-1-result.json");
    expect(jobPart).not.toHaveBeenCalled();
  });

  it("shows a large event detail by its first part and reads that event's detail when asked", async () => {
    await open(view({ shown: "whole", value: { ok: true } }, { shown: "large", size: whole.length, first_part: firstPart }));
    expect(document.body.textContent).not.toContain("row-49999");
    jobPart.mockResolvedValue({ status: "ok", data: large });
    await act(async () => {
      fireEvent.click(screen.getByTestId("show-all"));
    });
    expect(jobPart).toHaveBeenCalledExactlyOnceWith("job-1", { part: "event_detail", index: 0 });
    expect(screen.getByTestId("large-event-0").textContent).toContain("row-49999");
  });

  it("shows a small result whole, as before, with nothing to ask for", async () => {
    await open(view({ shown: "whole", value: { ok: true } }));
    expect(screen.getByTestId("job-result").textContent).toBe(JSON.stringify({ ok: true }, null, 2));
    expect(screen.queryByTestId("show-all")).toBeNull();
    expect(screen.queryByTestId("save-to-file")).toBeNull();
  });
});
