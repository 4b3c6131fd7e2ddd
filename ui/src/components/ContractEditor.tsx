// Adds or edits a contract: its name, its output schema (checked as JSON Schema while it is
// typed), its prompt template with the {{fields}} it uses listed live, and its sample inputs.
// The engine checks it again on save; its errors show beside the field they name.
import { useMemo, useState } from "react";

import { call, useLedger } from "../api";
import { commands, type ContractView } from "../bindings";
import {
  checkContract,
  contractJson,
  draftOfContract,
  samplesProblem,
  schemaProblem,
  templateFields,
  type ContractDraft,
} from "../forms/contractForm";
import { hasErrors, placeError, type FieldErrors } from "../forms/fields";
import { FieldError } from "./ProviderForm";

const FORM_FIELDS = ["name", "schema", "template", "samples"] as const;

export function ContractEditor({ contract, onDone }: { contract: ContractView | null; onDone: () => void }) {
  const { changed } = useLedger();
  const [draft, setDraft] = useState<ContractDraft>(() => draftOfContract(contract));
  const [errors, setErrors] = useState<FieldErrors>({});
  const [busy, setBusy] = useState(false);
  const editing = contract !== null;
  const fields = useMemo(() => templateFields(draft.system, draft.user), [draft.system, draft.user]);
  // Live: the schema and the samples are checked on every keystroke, not only on save.
  const schemaLive = useMemo(() => schemaProblem(draft.schema), [draft.schema]);
  const samplesLive = useMemo(() => samplesProblem(draft.samples, fields), [draft.samples, fields]);

  const set = (field: keyof ContractDraft, value: string) => {
    setDraft((d) => ({ ...d, [field]: value }));
    const shownAs = field === "system" || field === "user" ? "template" : field;
    setErrors((e) => ({ ...e, [shownAs]: undefined, form: undefined }));
  };

  const save = () => {
    const found = checkContract(draft);
    setErrors(found);
    if (hasErrors(found)) return;
    setBusy(true);
    void call(() => commands.saveContract(contractJson(draft))).then((r) => {
      setBusy(false);
      if (r.status === "error") {
        setErrors(placeError(r.error, "contract", FORM_FIELDS));
        return;
      }
      changed();
      onDone();
    });
  };

  const schemaError = errors["schema"] ?? schemaLive ?? undefined;
  const samplesError = errors["samples"] ?? samplesLive ?? undefined;
  return (
    <form
      className="card contract-editor"
      aria-label={editing ? `Edit contract ${contract.name}` : "Add a contract"}
      data-testid="contract-form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        save();
      }}
    >
      <h3>{editing ? <>Edit <code>{contract.name}</code></> : "Add a contract"}</h3>
      <label className="field">
        <span className="label">Name — what intents call it: 1–64 of A–Z a–z 0–9 . _ -</span>
        <input
          type="text"
          spellCheck={false}
          value={draft.name}
          readOnly={editing}
          onChange={(e) => set("name", e.currentTarget.value)}
          data-testid="contract-name"
          aria-invalid={errors["name"] !== undefined}
        />
        <FieldError prefix="contract" field="name" error={errors["name"]} />
      </label>
      <label className="field">
        <span className="label">
          Output schema (JSON Schema) — every answer must keep it; extra top-level keys are refused unless it sets
          additionalProperties
        </span>
        <textarea
          className="intent"
          rows={8}
          spellCheck={false}
          value={draft.schema}
          onChange={(e) => set("schema", e.currentTarget.value)}
          data-testid="contract-schema"
          aria-invalid={schemaError !== undefined}
        />
        {schemaError === undefined ? (
          <span className="field-ok" data-testid="contract-schema-ok">
            A valid JSON Schema.
          </span>
        ) : (
          <FieldError prefix="contract" field="schema" error={schemaError} />
        )}
      </label>
      <label className="field">
        <span className="label">System text — the instructions; {"{{field}}"} takes a value from the job's input</span>
        <textarea
          className="intent"
          rows={2}
          value={draft.system}
          onChange={(e) => set("system", e.currentTarget.value)}
          data-testid="contract-system"
        />
      </label>
      <label className="field">
        <span className="label">User text — the prompt, with {"{{field}}"} variables (a.b reaches into objects)</span>
        <textarea
          className="intent"
          rows={3}
          value={draft.user}
          onChange={(e) => set("user", e.currentTarget.value)}
          data-testid="contract-user"
          aria-invalid={errors["template"] !== undefined}
        />
        <FieldError prefix="contract" field="template" error={errors["template"]} />
      </label>
      <p className="muted" data-testid="contract-fields">
        Fields a job's input must have:{" "}
        {fields.length === 0 ? "none" : fields.map((f) => <code key={f} className="chip" data-field={f}>{f}</code>)}
      </p>
      <label className="field">
        <span className="label">Samples — a JSON array of inputs; a contract check sends each to the provider</span>
        <textarea
          className="intent"
          rows={5}
          spellCheck={false}
          value={draft.samples}
          onChange={(e) => set("samples", e.currentTarget.value)}
          data-testid="contract-samples"
          aria-invalid={samplesError !== undefined}
        />
        <FieldError prefix="contract" field="samples" error={samplesError} />
      </label>
      {errors["form"] !== undefined && (
        <p className="form-error" role="alert" data-testid="contract-error-form">
          {errors["form"]}
        </p>
      )}
      <p className="muted">Saving a changed schema, template or samples makes every earlier check stop counting.</p>
      <div className="actions">
        <button type="submit" className="button primary" disabled={busy} data-testid="contract-save">
          {editing ? "Save contract" : "Add contract"}
        </button>
        <button type="button" className="button" onClick={onDone} data-testid="contract-cancel">
          Close
        </button>
      </div>
    </form>
  );
}
