import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { commands } from "../bindings";
import { ContractEditor } from "./ContractEditor";

vi.mock("../bindings", () => ({ commands: { saveContract: vi.fn() } }));

const saveContract = vi.mocked(commands.saveContract);
const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });

afterEach(() => {
  cleanup();
  saveContract.mockReset();
});

describe("the contract editor", () => {
  it("checks the schema as JSON Schema while it is typed", () => {
    render(<ContractEditor contract={null} onDone={() => undefined} />);
    expect(screen.getByTestId("contract-schema-ok")).toBeTruthy();
    type("contract-schema", '{"type": "object", "properties": {"a": {"type": "strnig"}}}');
    expect(screen.getByTestId("contract-error-schema").textContent).toMatch(/Not a JSON Schema at \/properties\/a\/type/);
    type("contract-schema", '{"type": "object", "required": "a"}');
    expect(screen.getByTestId("contract-error-schema").textContent).toMatch(/at \/required/);
    type("contract-schema", '{"type": "object",');
    expect(screen.getByTestId("contract-error-schema").textContent).toMatch(/^Not JSON/);
    type("contract-schema", '{"$ref": "https://example.com/s.json"}');
    expect(screen.getByTestId("contract-error-schema").textContent).toMatch(/never fetches/);
    type("contract-schema", '{"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}');
    expect(screen.getByTestId("contract-schema-ok")).toBeTruthy();
  });

  it("lists the template's {{fields}} live and holds the samples to them", () => {
    render(<ContractEditor contract={null} onDone={() => undefined} />);
    const listed = () => [...screen.getByTestId("contract-fields").querySelectorAll("[data-field]")].map((e) => e.textContent);
    expect(listed()).toEqual(["text"]);
    type("contract-system", "Answer in {{ lang }}.");
    type("contract-user", "Summarise {{text}} for {{reader.name}}; again {{text}}");
    expect(listed()).toEqual(["lang", "text", "reader.name"]);
    expect(screen.getByTestId("contract-error-samples").textContent).toMatch(/Sample 1 has no field "lang"/);
    type("contract-samples", '[{"lang": "en", "text": "t", "reader": {"name": "Ann"}}]');
    expect(screen.queryByTestId("contract-error-samples")).toBeNull();
  });

  it("saves nothing while the editor shows an error, and shows the engine's error beside its field", async () => {
    saveContract.mockResolvedValue({
      status: "error",
      error: { code: "invalid_input", message: "contract.schema: no such $defs", details: { field: "contract.schema" } },
    });
    render(<ContractEditor contract={null} onDone={() => undefined} />);
    fireEvent.click(screen.getByTestId("contract-save"));
    expect(screen.getByTestId("contract-error-name").textContent).toBe("Required.");
    expect(saveContract).not.toHaveBeenCalled();
    type("contract-name", "summary");
    await act(async () => fireEvent.click(screen.getByTestId("contract-save")));
    expect(saveContract).toHaveBeenCalledTimes(1);
    const sent = JSON.parse(saveContract.mock.calls[0]?.[0] ?? "{}") as Record<string, unknown>;
    expect(Object.keys(sent).sort()).toEqual(["name", "samples", "schema", "template"]);
    expect(screen.getByTestId("contract-error-schema").textContent).toMatch(/no such \$defs/);
  });
});
