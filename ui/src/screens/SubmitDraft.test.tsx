import { act, cleanup, render, screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import type { Result } from "../api";
import { commands, type ContractView, type Error as EngineError, type ProviderView, type Submitted } from "../bindings";
import { job } from "../test/fixtures";
import { click, settle, type } from "../test/input";
import { SubmitScreen } from "./SubmitScreen";

vi.mock("../bindings", () => ({
  commands: { submit: vi.fn(), fingerprint: vi.fn(), providers: vi.fn(), contracts: vi.fn() },
}));

type Answer = Result<Submitted, EngineError>;
const submit = vi.mocked(commands.submit);
const fingerprint = vi.mocked(commands.fingerprint);

const invalid = (message: string): EngineError => ({ code: "invalid_input", message, details: { field: "intent" } });

/**
 * The engine's fingerprint stands in as the intent's compact JSON: blind to whitespace, which
 * is all these tests ask of it (the engine's own is tested in the app's command tests).
 */
function standInFingerprint(text: string): Promise<Result<string, EngineError>> {
  try {
    return Promise.resolve({ status: "ok", data: JSON.stringify(JSON.parse(text)) });
  } catch {
    return Promise.resolve({ status: "error", error: invalid("intent: not valid JSON") });
  }
}

/** A ledger of key → (fingerprint, job) standing in for the engine's submit (SPEC §2). */
function ledger(): Map<string, { fingerprint: string; id: string }> {
  const jobs = new Map<string, { fingerprint: string; id: string }>();
  submit.mockImplementation(async (key, intent): Promise<Answer> => {
    const fp = await standInFingerprint(intent);
    if (fp.status === "error") return fp;
    const held = jobs.get(key);
    if (held === undefined) {
      const id = `job-${jobs.size + 1}`;
      jobs.set(key, { fingerprint: fp.data, id });
      return { status: "ok", data: { job: job(id), replayed: false } };
    }
    if (held.fingerprint === fp.data) return { status: "ok", data: { job: job(held.id), replayed: true } };
    return { status: "error", error: { code: "idempotency_conflict", message: "another intent", details: { existing_job_id: held.id } } };
  });
  return jobs;
}

const contract: ContractView = {
  name: "summary",
  schema: { type: "object" },
  template: { system: "", user: "Summarise {{text}}" },
  samples: [{ text: "t" }],
  fields: ["text"],
  hash: "h",
  updated_at: "2026-01-01T00:00:00Z",
  checks: [],
};

async function show() {
  render(<SubmitScreen open={() => undefined} />);
  await settle();
}

const key = () => screen.getByTestId("draft-key").title;
const intent = () => (screen.getByTestId("intent") as HTMLTextAreaElement).value;
const lines = () => [...screen.getByTestId("outcomes").querySelectorAll("li")].map((li) => li.textContent ?? "");

beforeEach(() => {
  fingerprint.mockImplementation(standInFingerprint);
  vi.mocked(commands.providers).mockResolvedValue({ status: "ok", data: [{ name: "sandbox" } as ProviderView] });
  vi.mocked(commands.contracts).mockResolvedValue({ status: "ok", data: [contract] });
});

afterEach(() => {
  cleanup();
  sessionStorage.clear();
  vi.mocked(commands.submit).mockReset();
});

const A = '{"route": ["sandbox"], "input": {"prompt": "A"}}';

describe("a Submit draft", () => {
  it("is there as it was after leaving the screen, and its next click is already submitted", async () => {
    const jobs = ledger();
    await show();
    await type("intent", A);
    const first = key();
    await click("submit");
    expect(lines()).toEqual([expect.stringContaining("Submitted: new job job-1")]);

    // Another screen is shown: this one is unmounted, its state gone.
    cleanup();
    await show();
    expect(key()).toBe(first);
    expect(intent()).toBe(A);
    expect(lines()).toEqual([expect.stringContaining("Submitted: new job job-1")]);
    await click("submit");
    expect(lines()[1]).toContain("Already submitted: the same job job-1");
    expect(submit.mock.calls.map(([k]) => k)).toEqual([first, first]);
    expect(jobs.size).toBe(1);
  });

  it("keeps an answer that arrives while the screen is gone", async () => {
    const answers: ((answer: Answer) => void)[] = [];
    submit.mockImplementation(() => new Promise<Answer>((resolve) => answers.push(resolve)));
    await show();
    await click("submit");
    cleanup();
    await act(async () => answers[0]?.({ status: "ok", data: { job: job("job-1"), replayed: false } }));
    await show();
    expect(lines()).toEqual([expect.stringContaining("Submitted: new job job-1")]);
  });

  it("keeps the contract form's values, route and shown JSON after leaving the screen", async () => {
    ledger();
    await show();
    await type("submit-contract", "summary");
    await type("submit-field-text", "The cat sat.");
    await type("submit-params", '{"temperature": 0}');
    await click("submit-show-json");
    const first = key();
    const built = intent();
    cleanup();
    await show();
    expect((screen.getByTestId("submit-contract") as HTMLSelectElement).value).toBe("summary");
    expect((screen.getByTestId("submit-field-text") as HTMLTextAreaElement).value).toBe("The cat sat.");
    expect((screen.getByTestId("submit-params") as HTMLInputElement).value).toBe('{"temperature": 0}');
    expect(screen.getByTestId("submit-route").querySelector("[data-provider=sandbox]")).not.toBeNull();
    expect(intent()).toBe(built);
    expect(key()).toBe(first);
  });

  it("keeps its key when the intent is typed over and typed back after a submit", async () => {
    const jobs = ledger();
    await show();
    await type("intent", A);
    const first = key();
    await click("submit");
    // One more character, then Backspace: first invalid JSON, then another valid intent.
    await type("intent", `${A}x`);
    expect(key()).toBe(first);
    await type("intent", A.replace('"A"', '"Ax"'));
    expect(key()).not.toBe(first);
    await type("intent", A);
    expect(key()).toBe(first);
    await click("submit");
    expect(lines().at(-1)).toContain("Already submitted: the same job job-1");
    expect(submit.mock.calls.map(([k]) => k)).toEqual([first, first]);
    expect(jobs.size).toBe(1);
  });

  it("keeps its key when only whitespace is added to the JSON after a submit", async () => {
    const jobs = ledger();
    await show();
    await type("intent", A);
    const first = key();
    await click("submit");
    await type("intent", `  ${A.replace("{", "{\n    ")}\n`);
    expect(key()).toBe(first);
    await click("submit");
    expect(lines().at(-1)).toContain("Already submitted: the same job job-1");
    expect(submit.mock.calls.map(([k]) => k)).toEqual([first, first]);
    expect(jobs.size).toBe(1);
  });

  it("keeps its key while a contract form's params are briefly invalid and then fixed", async () => {
    const jobs = ledger();
    await show();
    await type("submit-contract", "summary");
    await type("submit-field-text", "one");
    await type("submit-params", '{"temperature": 0}');
    const first = key();
    await click("submit");
    await type("submit-params", '{"temperature": 0');
    await type("submit-params", '{"temperature": 0}');
    expect(key()).toBe(first);
    await click("submit");
    expect(lines().at(-1)).toContain("Already submitted: the same job job-1");
    expect(submit.mock.calls.map(([k]) => k)).toEqual([first, first]);
    expect(jobs.size).toBe(1);
  });

  it("starts over with a new key, the text kept, only when New draft is clicked", async () => {
    const jobs = ledger();
    await show();
    await type("intent", A);
    const first = key();
    await click("submit");
    await click("new-draft");
    const second = key();
    expect(second).not.toBe(first);
    expect(intent()).toBe(A);
    expect(lines()).toEqual([]);
    await click("submit");
    expect(lines()).toEqual([expect.stringContaining("Submitted: new job job-2")]);
    expect(submit.mock.calls.map(([k]) => k)).toEqual([first, second]);
    expect(jobs.size).toBe(2);
    // The new draft survives a visit elsewhere too.
    cleanup();
    await show();
    expect(key()).toBe(second);
  });

  it("says an invalid intent is invalid and sends nothing", async () => {
    ledger();
    await show();
    await type("intent", '{"route": ["sandbox"], "input": ');
    await click("submit");
    expect(lines()).toEqual([expect.stringContaining("The intent is not valid")]);
    expect(submit).not.toHaveBeenCalled();
  });
});
