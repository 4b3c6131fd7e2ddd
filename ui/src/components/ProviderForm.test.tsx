import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands, type ProviderView } from "../bindings";
import { ProviderForm } from "./ProviderForm";

vi.mock("../bindings", () => ({
  commands: { saveProvider: vi.fn(), setProviderKey: vi.fn(), clearProviderKey: vi.fn() },
}));

const saveProvider = vi.mocked(commands.saveProvider);
const setProviderKey = vi.mocked(commands.setProviderKey);

const view = (over: Partial<ProviderView>): ProviderView => ({
  name: "model-a",
  kind: "openai",
  base_url: "https://api.example.com/v1",
  model: "gpt-4o-mini",
  api_key_env: null,
  soft_timeout_ms: 30000,
  hard_timeout_ms: 120000,
  honours_idempotency_key: false,
  status_url: null,
  context_window: null,
  dials: null,
  config: {},
  key: { source: "not_set", required: true },
  created_at: "2026-01-01T00:00:00Z",
  updated_at: "2026-01-01T00:00:00Z",
  ...over,
});

const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });

afterEach(() => {
  cleanup();
  saveProvider.mockReset();
  setProviderKey.mockReset();
});

describe("the provider form", () => {
  it("shows client-side errors beside their fields and saves nothing", () => {
    render(<ProviderForm provider={null} onDone={() => undefined} />);
    type("provider-name", "bad name!");
    type("provider-base_url", "https://user:pass@api.example.com/v1");
    type("provider-soft_timeout_ms", "500");
    type("provider-hard_timeout_ms", "100");
    fireEvent.click(screen.getByTestId("provider-save"));
    expect(screen.getByTestId("provider-error-name").textContent).toMatch(/1–64 characters/);
    expect(screen.getByTestId("provider-error-base_url").textContent).toMatch(/No user:pass@/);
    expect(screen.getByTestId("provider-error-hard_timeout_ms").textContent).toMatch(/after the soft timeout/);
    expect(screen.getByTestId("provider-error-model").textContent).toBe("Required for this kind.");
    expect(screen.queryByTestId("provider-error-soft_timeout_ms")).toBeNull();
    expect(saveProvider).not.toHaveBeenCalled();
  });

  it("shows only the kind's fields and says what honouring Idempotency-Key means", () => {
    render(<ProviderForm provider={null} onDone={() => undefined} />);
    expect(screen.getByTestId("provider-model")).toBeTruthy();
    type("provider-kind", "http");
    expect(screen.queryByTestId("provider-model")).toBeNull();
    expect(screen.queryByTestId("provider-tokenizer")).toBeNull();
    expect(document.getElementById("provider-honours_idempotency_key-hint")?.textContent).toBe(
      "Off: a 5xx or a timeout leaves the attempt unknown until a person decides.",
    );
    type("provider-kind", "sandbox");
    expect(screen.queryByTestId("provider-key")).toBeNull();
  });

  it("puts the engine's invalid_input beside the field it names", async () => {
    saveProvider.mockResolvedValue({
      status: "error",
      error: { code: "invalid_input", message: "provider.base_url: a query parameter named like a secret", details: { field: "provider.base_url" } },
    });
    render(<ProviderForm provider={view({})} onDone={() => undefined} />);
    await act(async () => fireEvent.click(screen.getByTestId("provider-save")));
    expect(saveProvider).toHaveBeenCalledTimes(1);
    expect(screen.getByTestId("provider-error-base_url").textContent).toMatch(/named like a secret/);
    expect(screen.queryByTestId("provider-error-form")).toBeNull();
  });

  it("sends a typed key once, after the configuration, clears the field and never shows it", async () => {
    saveProvider.mockImplementation((json) => Promise.resolve({ status: "ok", data: view({ config: JSON.parse(json) }) }));
    setProviderKey.mockResolvedValue({ status: "ok", data: null });
    const done = vi.fn();
    render(<ProviderForm provider={view({})} onDone={done} />);
    expect(screen.getByTestId("provider-key-status").textContent).toBe("not set (required)");
    const input = screen.getByTestId("provider-key") as HTMLInputElement;
    expect(input.type).toBe("password");
    type("provider-key", "sk-secret");
    await act(async () => fireEvent.click(screen.getByTestId("provider-save")));
    const saved = JSON.parse(saveProvider.mock.calls[0]?.[0] ?? "{}") as Record<string, unknown>;
    expect(JSON.stringify(saved)).not.toContain("sk-secret");
    expect(saved).toMatchObject({ name: "model-a", kind: "openai", model: "gpt-4o-mini", soft_timeout_ms: 30000 });
    expect(setProviderKey).toHaveBeenCalledExactlyOnceWith("model-a", "sk-secret");
    expect(input.value).toBe("");
    expect(done).toHaveBeenCalled();
  });

  it("explains the key retention, refuses it without honoured keys, and saves it as seconds", async () => {
    saveProvider.mockImplementation((json) => Promise.resolve({ status: "ok", data: view({ config: JSON.parse(json) }) }));
    render(<ProviderForm provider={view({ kind: "http", model: null, key: { source: "not_set", required: false } })} onDone={() => undefined} />);
    expect(document.getElementById("provider-key_retention_s-hint")?.textContent).toMatch(/how long the provider remembers a key.*Stripe: 24 h/i);
    type("provider-key_retention_s", "86400");
    fireEvent.click(screen.getByTestId("provider-save"));
    expect(screen.getByTestId("provider-error-key_retention_s").textContent).toMatch(/honours Idempotency-Key/);
    type("provider-key_retention_s", "0");
    fireEvent.click(screen.getByTestId("provider-save"));
    expect(screen.getByTestId("provider-error-key_retention_s").textContent).toMatch(/whole number of seconds/);
    expect(saveProvider).not.toHaveBeenCalled();
    fireEvent.click(screen.getByTestId("provider-honours_idempotency_key"));
    type("provider-key_retention_s", "86400");
    await act(async () => fireEvent.click(screen.getByTestId("provider-save")));
    const saved = JSON.parse(saveProvider.mock.calls[0]?.[0] ?? "{}") as Record<string, unknown>;
    expect(saved).toMatchObject({ honours_idempotency_key: true, key_retention_s: 86400 });
  });

  it("shows a stored key retention for editing and leaves an empty one out", async () => {
    saveProvider.mockImplementation((json) => Promise.resolve({ status: "ok", data: view({ config: JSON.parse(json) }) }));
    const keyed = view({ kind: "http", model: null, honours_idempotency_key: true, config: { key_retention_s: 3600 }, key: { source: "not_set", required: false } });
    render(<ProviderForm provider={keyed} onDone={() => undefined} />);
    expect((screen.getByTestId("provider-key_retention_s") as HTMLInputElement).value).toBe("3600");
    type("provider-key_retention_s", "");
    await act(async () => fireEvent.click(screen.getByTestId("provider-save")));
    const saved = JSON.parse(saveProvider.mock.calls[0]?.[0] ?? "{}") as Record<string, unknown>;
    expect(saved).not.toHaveProperty("key_retention_s");
  });

  it("explains each price field, refuses a price it cannot read beside its field, and saves decimal strings", async () => {
    saveProvider.mockImplementation((json) => Promise.resolve({ status: "ok", data: view({ config: JSON.parse(json) }) }));
    render(<ProviderForm provider={view({})} onDone={() => undefined} />);
    expect(document.getElementById("provider-price_per_1k_output_tokens-hint")?.textContent).toMatch(/per thousand output \(completion\) tokens/);
    expect(document.getElementById("provider-price_currency-hint")?.textContent).toMatch(/ISO 4217/);
    type("provider-price_per_request", "0,01");
    type("provider-price_per_1k_input_tokens", "0.0000000001");
    fireEvent.click(screen.getByTestId("provider-save"));
    expect(screen.getByTestId("provider-error-price_per_request").textContent).toMatch(/decimal such as 0.15/);
    expect(screen.getByTestId("provider-error-price_per_1k_input_tokens").textContent).toMatch(/at most 9 decimal places/);
    expect(screen.getByTestId("provider-error-price_currency").textContent).toMatch(/Required with a price/);
    expect(saveProvider).not.toHaveBeenCalled();
    type("provider-price_currency", "USD");
    type("provider-price_per_request", "0.01");
    type("provider-price_per_1k_input_tokens", "0.15");
    type("provider-price_per_1k_output_tokens", "0.60");
    await act(async () => fireEvent.click(screen.getByTestId("provider-save")));
    const saved = JSON.parse(saveProvider.mock.calls[0]?.[0] ?? "{}") as Record<string, unknown>;
    expect(saved["price"]).toEqual({ currency: "USD", per_request: "0.01", per_1k_input_tokens: "0.15", per_1k_output_tokens: "0.60" });
  });

  it("shows a stored price for editing, puts the engine's error on a price's part beside it, and leaves an empty price out", async () => {
    saveProvider.mockResolvedValueOnce({
      status: "error",
      error: { code: "invalid_input", message: "\"XYZ1\" is not a currency code", details: { field: "provider.price.currency" } },
    });
    const priced = view({ config: { price: { currency: "EUR", per_1k_input_tokens: "0.15" } } });
    render(<ProviderForm provider={priced} onDone={() => undefined} />);
    expect((screen.getByTestId("provider-price_currency") as HTMLInputElement).value).toBe("EUR");
    expect((screen.getByTestId("provider-price_per_1k_input_tokens") as HTMLInputElement).value).toBe("0.15");
    await act(async () => fireEvent.click(screen.getByTestId("provider-save")));
    expect(screen.getByTestId("provider-error-price_currency").textContent).toMatch(/not a currency code/);
    saveProvider.mockImplementation((json) => Promise.resolve({ status: "ok", data: view({ config: JSON.parse(json) }) }));
    type("provider-price_currency", "");
    type("provider-price_per_1k_input_tokens", "");
    await act(async () => fireEvent.click(screen.getByTestId("provider-save")));
    const saved = JSON.parse(saveProvider.mock.calls[1]?.[0] ?? "{}") as Record<string, unknown>;
    expect(saved).not.toHaveProperty("price");
  });

  it("gives the sandbox the context window a price per output token needs, and saves both", async () => {
    saveProvider.mockImplementation((json) => Promise.resolve({ status: "ok", data: view({ config: JSON.parse(json) }) }));
    const sandbox = view({ name: "sandbox", kind: "sandbox", base_url: null, model: null, key: { source: "not_set", required: false } });
    render(<ProviderForm provider={sandbox} onDone={() => undefined} />);
    expect(document.getElementById("provider-context_window-hint")?.textContent).toMatch(/price per 1k output tokens/);
    type("provider-price_currency", "USD");
    type("provider-price_per_1k_output_tokens", "0.60");
    type("provider-context_window", "8192");
    await act(async () => fireEvent.click(screen.getByTestId("provider-save")));
    const saved = JSON.parse(saveProvider.mock.calls[0]?.[0] ?? "{}") as Record<string, unknown>;
    expect(saved).toMatchObject({ kind: "sandbox", context_window: 8192, price: { currency: "USD", per_1k_output_tokens: "0.60" } });
  });
});
