// Adds or edits a contract: its name, its output schema (checked as JSON Schema while it is
// typed), its prompt template with the {{fields}} it uses listed live, and its sample inputs.
// The engine checks it again on save; its errors show beside the field they name.
import { useMemo, useState, type ReactNode } from "react";

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
import { EditorForm } from "./EditorForm";
import { FieldError } from "./FormRow";

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
    <EditorForm
      noun="contract"
      name={contract?.name ?? null}
      busy={busy}
      formError={errors["form"]}
      note={<p className="muted">Saving a changed schema, template or samples makes every earlier check stop counting.</p>}
      onSave={save}
      onClose={onDone}
    >
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
      <TextField part="schema" draft={draft} set={set} invalid={schemaError !== undefined}>
        {schemaError === undefined ? (
          <span className="field-ok" data-testid="contract-schema-ok">
            A valid JSON Schema.
          </span>
        ) : (
          <FieldError prefix="contract" field="schema" error={schemaError} />
        )}
      </TextField>
      <TextField part="system" draft={draft} set={set} />
      <TextField part="user" draft={draft} set={set} invalid={errors["template"] !== undefined}>
        <FieldError prefix="contract" field="template" error={errors["template"]} />
      </TextField>
      <p className="muted" data-testid="contract-fields">
        Fields a job's input must have:{" "}
        {fields.length === 0 ? "none" : fields.map((f) => <code key={f} className="chip" data-field={f}>{f}</code>)}
      </p>
      <TextField part="samples" draft={draft} set={set} invalid={samplesError !== undefined}>
        <FieldError prefix="contract" field="samples" error={samplesError} />
      </TextField>
    </EditorForm>
  );
}

/** The text parts of a contract, each typed in a text area of its own. */
type TextPart = "schema" | "system" | "user" | "samples";

/** Each text part's label, its text area's height in rows, and whether it is JSON (no spelling check). */
const TEXT_PARTS: Record<TextPart, { label: string; rows: number; json: boolean }> = {
  schema: {
    label:
      "Output schema (JSON Schema) — every answer must keep it; extra top-level keys are refused unless it sets " +
      "additionalProperties",
    rows: 8,
    json: true,
  },
  system: { label: "System text — the instructions; {{field}} takes a value from the job's input", rows: 2, json: false },
  user: { label: "User text — the prompt, with {{field}} variables (a.b reaches into objects)", rows: 3, json: false },
  samples: { label: "Samples — a JSON array of inputs; a contract check sends each to the provider", rows: 5, json: true },
};

/** One text part of the contract in a labelled text area, with what is said of it beneath. */
function TextField({
  part,
  draft,
  set,
  invalid,
  children,
}: {
  part: TextPart;
  draft: ContractDraft;
  set: (field: TextPart, value: string) => void;
  /** Whether what is typed is refused; left out where nothing is checked. */
  invalid?: boolean;
  children?: ReactNode;
}) {
  const { label, rows, json } = TEXT_PARTS[part];
  return (
    <label className="field">
      <span className="label">{label}</span>
      <textarea
        className="intent"
        rows={rows}
        spellCheck={json ? false : undefined}
        value={draft[part]}
        onChange={(e) => set(part, e.currentTarget.value)}
        data-testid={`contract-${part}`}
        aria-invalid={invalid}
      />
      {children}
    </label>
  );
}
