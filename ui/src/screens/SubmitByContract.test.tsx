import { act, cleanup, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type ContractView, type ProviderView } from "../bindings";
import { job } from "../test/fixtures";
import { click, settle, type } from "../test/input";
import { SubmitScreen } from "./SubmitScreen";

vi.mock("../bindings", () => ({
  commands: {
    submit: vi.fn(),
    // Every intent here is a different one: its text is its fingerprint.
    fingerprint: vi.fn((text: string) => Promise.resolve({ status: "ok", data: text })),
    providers: vi.fn(),
    contracts: vi.fn(),
  },
}));

const submit = vi.mocked(commands.submit);

const provider = (name: string) => ({ name }) as ProviderView;
const contract: ContractView = {
  name: "summary",
  schema: { type: "object" },
  template: { system: "", user: "Summarise {{text}} in {{style.lang}}" },
  samples: [{ text: "t", style: { lang: "en" } }],
  fields: ["text", "style.lang"],
  hash: "h",
  updated_at: "2026-01-01T00:00:00Z",
  checks: [
    { id: "c1", contract: "summary", contract_hash: "h", provider: "model-b", provider_updated_at: "", passed: true, samples: [], checked_at: "", current: true },
    { id: "c2", contract: "summary", contract_hash: "old", provider: "model-c", provider_updated_at: "", passed: true, samples: [], checked_at: "", current: false },
  ],
};

async function renderLoaded() {
  vi.mocked(commands.providers).mockResolvedValue({ status: "ok", data: ["model-a", "model-b", "model-c"].map(provider) });
  vi.mocked(commands.contracts).mockResolvedValue({ status: "ok", data: [contract] });
  submit.mockImplementation(() => Promise.resolve({ status: "ok", data: { job: job("job-1"), replayed: false } }));
  await act(async () => {
    render(<SubmitScreen open={() => undefined} />);
  });
}

afterEach(() => {
  cleanup();
  sessionStorage.clear();
  submit.mockReset();
});

describe("submit by contract", () => {
  it("turns the contract's fields into inputs and builds the intent from them and the route", async () => {
    await renderLoaded();
    await type("submit-contract", "summary");
    expect(screen.queryByTestId("intent")).toBeNull();
    await type("submit-field-text", "The cat sat.");
    await type("submit-field-style.lang", "pl");
    await type("submit-route-add", "model-b");
    await type("submit-route-add", "model-c");
    expect(screen.getByTestId("submit-route-validated-model-b").textContent).toBe("validated fallback");
    expect(screen.getByTestId("submit-route-unvalidated-model-c").textContent).toBe("not validated: no automatic failover");
    await click("submit-route-up-model-c");
    await type("submit-max-attempts", "3");
    await type("submit-params", '{"temperature": 0}');
    await click("submit-show-json");
    const shown = (screen.getByTestId("intent") as HTMLTextAreaElement).value;
    expect(JSON.parse(shown)).toEqual({
      route: ["model-a", "model-c", "model-b"],
      input: { text: "The cat sat.", style: { lang: "pl" } },
      contract: "summary",
      max_attempts: 3,
      params: { temperature: 0 },
    });
    await click("submit");
    expect(submit.mock.calls[0]?.[1]).toBe(shown);
  });

  it("keeps the draft's key for every click and makes a new one when the form changes after a submit", async () => {
    await renderLoaded();
    const key = screen.getByTestId("draft-key").title;
    await type("submit-contract", "summary");
    await type("submit-field-text", "one");
    expect(screen.getByTestId("draft-key").title).toBe(key);
    await click("submit");
    await click("submit");
    expect(submit.mock.calls.map(([k]) => k)).toEqual([key, key]);
    await type("submit-field-text", "two");
    const fresh = screen.getByTestId("draft-key").title;
    expect(fresh).not.toBe(key);
    await click("submit");
    expect(submit.mock.calls[2]?.[0]).toBe(fresh);
    expect(JSON.parse(submit.mock.calls[2]?.[1] ?? "{}")).toMatchObject({ input: { text: "two" } });
  });

  it("sends nothing while a form field is wrong, and says which", async () => {
    await renderLoaded();
    await type("submit-contract", "summary");
    await type("submit-params", "[1]");
    await click("submit");
    expect(screen.getByTestId("submit-error-params").textContent).toMatch(/A JSON object/);
    expect(submit).not.toHaveBeenCalled();
  });
});
