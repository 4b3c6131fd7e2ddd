// The contract editor's rules: the schema checked as JSON Schema while it is typed, the
// template's {{fields}}, the samples, and the contract it saves.
import { Validator, type OutputUnit, type Schema } from "@cfworker/json-schema";

import type { ContractView, Value } from "../bindings";
import { nameProblem, type FieldErrors } from "./fields";
import { META_SCHEMA_2020_12 } from "./metaSchema";

/** What the editor holds while it is edited: text as typed. */
export interface ContractDraft {
  name: string;
  schema: string;
  system: string;
  user: string;
  samples: string;
}

// Interpreted, never compiled to code: the window's content security policy forbids eval.
const meta = new Validator(META_SCHEMA_2020_12 as unknown as Schema, "2020-12", false);

export function draftOfContract(view: ContractView | null): ContractDraft {
  if (view === null) {
    return {
      name: "",
      schema: '{\n  "type": "object",\n  "properties": {"summary": {"type": "string"}},\n  "required": ["summary"]\n}',
      system: "",
      user: "Summarise: {{text}}",
      samples: '[\n  {"text": "The cat sat on the mat."}\n]',
    };
  }
  return {
    name: view.name,
    schema: JSON.stringify(view.schema, null, 2),
    system: view.template.system,
    user: view.template.user,
    samples: JSON.stringify(view.samples, null, 2),
  };
}

/** The `{{field}}` variables of the template, system text first, each once, in order of use. */
export function templateFields(system: string, user: string): string[] {
  const out: string[] = [];
  for (const text of [system, user]) {
    for (const m of text.matchAll(/\{\{([^}]*)\}\}/g)) {
      const field = (m[1] ?? "").trim();
      if (field !== "" && !out.includes(field)) out.push(field);
    }
  }
  return out;
}

/** Parses JSON text, or says where it breaks. */
export function parseJson(text: string): { ok: true; value: Value } | { ok: false; why: string } {
  try {
    return { ok: true, value: JSON.parse(text) as Value };
  } catch (e) {
    return { ok: false, why: `Not JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** The most specific of a validation's errors: the one deepest in the schema checked. */
function first(errors: OutputUnit[]): string {
  const e = errors.reduce<OutputUnit | undefined>(
    (best, x) => (best === undefined || x.instanceLocation.length > best.instanceLocation.length ? x : best),
    undefined,
  );
  if (e === undefined) return "does not validate";
  const at = e.instanceLocation.replace(/^#/, "") || "/";
  return `at ${at}: ${e.error}`;
}

/** What is wrong with the schema's text as a JSON Schema (2020-12), or null when nothing is. */
export function schemaProblem(text: string): string | null {
  const parsed = parseJson(text);
  if (!parsed.ok) return parsed.why;
  const schema = parsed.value;
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) {
    return "The schema must be a JSON object.";
  }
  const checked = meta.validate(schema);
  if (!checked.valid) return `Not a JSON Schema ${first(checked.errors)}`;
  const external = findExternalRef(schema);
  if (external !== null) return `$ref ${external} points outside the schema; onejob never fetches a $ref.`;
  try {
    new Validator(schema as Schema, "2020-12").validate({});
  } catch (e) {
    return `The schema does not resolve: ${e instanceof Error ? e.message : String(e)}`;
  }
  return null;
}

/** The first `$ref` that does not point inside the schema itself. */
function findExternalRef(value: Value): string | null {
  if (value === null || typeof value !== "object") return null;
  if (Array.isArray(value)) {
    for (const v of value) {
      const found = findExternalRef(v);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [k, v] of Object.entries(value)) {
    if (k === "$ref" && typeof v === "string" && !v.startsWith("#")) return v;
    const found = findExternalRef(v);
    if (found !== null) return found;
  }
  return null;
}

/** Whether an input has a value at a dotted path (`a.b`, `items.0`), as the template fills it. */
function has(input: Value, path: string): boolean {
  let at: Value | undefined = input;
  for (const key of path.split(".")) {
    if (at === null || typeof at !== "object") return false;
    at = Array.isArray(at) ? at[Number(key)] : at[key];
    if (at === undefined) return false;
  }
  return true;
}

/** What is wrong with the samples' text: not a non-empty array, or a sample without a field. */
export function samplesProblem(text: string, fields: readonly string[]): string | null {
  const parsed = parseJson(text);
  if (!parsed.ok) return parsed.why;
  const samples = parsed.value;
  if (!Array.isArray(samples) || samples.length === 0) return "An array of at least one sample input.";
  for (const [i, sample] of samples.entries()) {
    const lacking = fields.find((f) => !has(sample, f));
    if (lacking !== undefined) return `Sample ${i + 1} has no field "${lacking}" that the template uses.`;
  }
  return null;
}

/** The problems found before anything is sent, by field; empty when the contract may be saved. */
export function checkContract(d: ContractDraft): FieldErrors {
  const errors: FieldErrors = {};
  const name = nameProblem(d.name);
  if (name !== null) errors["name"] = name;
  const schema = schemaProblem(d.schema);
  if (schema !== null) errors["schema"] = schema;
  if (d.user.trim() === "") errors["template"] = "The user text must not be empty.";
  if ((d.system + d.user).split("{{").length !== (d.system + d.user).split("}}").length) {
    errors["template"] = "A {{ has no matching }}.";
  }
  const samples = samplesProblem(d.samples, templateFields(d.system, d.user));
  if (samples !== null) errors["samples"] = samples;
  return errors;
}

/** The contract's JSON, from a draft that passed `checkContract`. */
export function contractJson(d: ContractDraft): string {
  return JSON.stringify({
    name: d.name,
    schema: JSON.parse(d.schema) as Value,
    template: { system: d.system, user: d.user },
    samples: JSON.parse(d.samples) as Value,
  });
}
