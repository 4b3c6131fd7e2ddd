import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type Error as EngineError, type Submitted } from "../bindings";
import type { Result } from "../api";
import { job } from "../test/fixtures";
import { settle } from "../test/input";
import { SubmitScreen } from "./SubmitScreen";

vi.mock("../bindings", () => ({
  commands: {
    submit: vi.fn(),
    // Every intent here is a different one: its text is its fingerprint.
    fingerprint: vi.fn((text: string) => Promise.resolve({ status: "ok", data: text })),
    providers: vi.fn(() => Promise.resolve({ status: "ok", data: [] })),
  },
}));

type Answer = Result<Submitted, EngineError>;
const submit = vi.mocked(commands.submit);

/** Makes each submit wait until the test answers it. */
function pendingSubmits(): ((answer: Answer) => void)[] {
  const answers: ((answer: Answer) => void)[] = [];
  submit.mockImplementation(() => new Promise<Answer>((resolve) => answers.push(resolve)));
  return answers;
}

const ok = (id: string, replayed: boolean): Answer => ({ status: "ok", data: { job: job(id), replayed } });

afterEach(() => {
  cleanup();
  sessionStorage.clear();
  submit.mockReset();
});

describe("the Submit screen", () => {
  it("sends one key for two quick clicks and says the second was already submitted", async () => {
    const answers = pendingSubmits();
    render(<SubmitScreen open={() => undefined} />);
    const key = screen.getByTestId("draft-key").title;
    fireEvent.click(screen.getByTestId("submit"));
    fireEvent.click(screen.getByTestId("submit"));
    await settle();
    expect(submit.mock.calls.map(([k]) => k)).toEqual([key, key]);
    // The second answer arrives first; the outcomes stay in click order.
    await act(async () => answers[1]?.(ok("job-1", true)));
    await act(async () => answers[0]?.(ok("job-1", false)));
    const lines = screen.getByTestId("outcomes").textContent ?? "";
    expect(lines.indexOf("Submitted: new job")).toBeLessThan(lines.indexOf("Already submitted"));
  });

  it("starts a new key when the intent is edited after a submit, and drops the old draft's late answer", async () => {
    const answers = pendingSubmits();
    render(<SubmitScreen open={() => undefined} />);
    const key = screen.getByTestId("draft-key").title;
    fireEvent.change(screen.getByTestId("intent"), { target: { value: '{"route": ["sandbox"], "input": {}}' } });
    expect(screen.getByTestId("draft-key").title).toBe(key);
    fireEvent.click(screen.getByTestId("submit"));
    await settle();
    fireEvent.change(screen.getByTestId("intent"), { target: { value: '{"route": ["sandbox"], "input": {"n": 2}}' } });
    await settle();
    const fresh = screen.getByTestId("draft-key").title;
    expect(fresh).not.toBe(key);
    fireEvent.click(screen.getByTestId("submit"));
    await settle();
    expect(submit.mock.calls.map(([k]) => k)).toEqual([key, fresh]);
    await act(async () => answers[0]?.(ok("old-job", false)));
    await act(async () => answers[1]?.(ok("new-job", false)));
    const shown = [...screen.getByTestId("outcomes").querySelectorAll("[data-job-id]")].map((e) =>
      e.getAttribute("data-job-id"),
    );
    expect(shown).toEqual(["new-job"]);
  });
});
