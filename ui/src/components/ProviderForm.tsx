// Adds or edits a provider of any kind: the kind's fields only, each explained, checked before
// anything is sent, with the engine's own errors beside the field they name. An API key typed
// here goes once to the OS keyring and is never shown again.
import { useState } from "react";

import { call, useLedger } from "../api";
import { commands, type ProviderKind, type ProviderView } from "../bindings";
import { hasErrors, placeError, type FieldErrors } from "../forms/fields";
import { EditorForm } from "./EditorForm";
import { FormRow, inputProps } from "./FormRow";
import {
  checkProvider,
  configOf,
  draftOf,
  explain,
  FIELDS,
  keyText,
  KINDS,
  LABEL,
  takesKey,
  type ProviderDraft,
  type ProviderField,
} from "../forms/providerForm";

interface Props {
  /** The provider edited, or null for a new one. */
  provider: ProviderView | null;
  onDone: () => void;
}

export function ProviderForm({ provider, onDone }: Props) {
  const { changed } = useLedger();
  const [draft, setDraft] = useState<ProviderDraft>(() => draftOf(provider));
  const [key, setKey] = useState("");
  const [errors, setErrors] = useState<FieldErrors>({});
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<string | null>(null);
  const fields = FIELDS[draft.kind];
  const editing = provider !== null;

  const set = <F extends keyof ProviderDraft>(field: F, value: ProviderDraft[F]) => {
    setDraft((d) => ({ ...d, [field]: value }));
    setErrors((e) => ({ ...e, [field]: undefined, form: undefined }));
  };

  const save = async () => {
    const found = checkProvider(draft);
    setErrors(found);
    setNote(null);
    if (hasErrors(found)) return;
    setBusy(true);
    const saved = await call(() => commands.saveProvider(JSON.stringify(configOf(draft, provider?.config ?? null))));
    if (saved.status === "error") {
      setBusy(false);
      setErrors(placeError(saved.error, "provider", fields));
      return;
    }
    // Sent once, then forgotten: the field is cleared whatever the keyring answers.
    const typed = key;
    setKey("");
    if (takesKey(draft.kind) && typed !== "") {
      const stored = await call(() => commands.setProviderKey(draft.name, typed));
      if (stored.status === "error") {
        setBusy(false);
        changed();
        setErrors({ key: `The configuration was saved, but the key was not: ${stored.error.message}` });
        return;
      }
    }
    setBusy(false);
    changed();
    onDone();
  };

  const clearKey = async () => {
    if (provider === null) return;
    const cleared = await call(() => commands.clearProviderKey(provider.name));
    if (cleared.status === "error") setErrors({ key: cleared.error.message });
    else setNote("The key was removed from the keyring.");
    changed();
  };

  return (
    <EditorForm
      noun="provider"
      name={provider?.name ?? null}
      busy={busy}
      formError={errors["form"]}
      note={note !== null && <p className="muted">{note}</p>}
      onSave={save}
      onClose={onDone}
    >
      <div className="form-grid">
        {fields.map((field) => (
          <Field key={field} field={field} draft={draft} error={errors[field]} set={set} editing={editing} />
        ))}
        {takesKey(draft.kind) && (
          <FormRow
            prefix="provider"
            field="key"
            label="API key"
            error={errors["key"]}
            hint="Saved to the OS keyring on Save, then never shown again; it is never stored in the database."
          >
            <input
              {...inputProps("provider", "key", errors["key"])}
              type="password"
              autoComplete="off"
              value={key}
              placeholder={editing ? "type a new key to replace it" : "optional"}
              onChange={(e) => {
                setKey(e.currentTarget.value);
                setErrors((x) => ({ ...x, key: undefined }));
              }}
            />
            <span className="key-status" data-testid="provider-key-status">
              {editing ? keyText(provider.key) : "not set"}
            </span>
            {editing && provider.key.source === "keyring" && (
              <button type="button" className="button" onClick={() => void clearKey()} data-testid="provider-clear-key">
                Clear key
              </button>
            )}
          </FormRow>
        )}
      </div>
    </EditorForm>
  );
}

function Field({
  field,
  draft,
  error,
  set,
  editing,
}: {
  field: ProviderField;
  draft: ProviderDraft;
  error: string | undefined;
  set: <F extends keyof ProviderDraft>(field: F, value: ProviderDraft[F]) => void;
  editing: boolean;
}) {
  const common = inputProps("provider", field, error);
  let input;
  switch (field) {
    case "kind":
      input = (
        <select {...common} value={draft.kind} onChange={(e) => set("kind", e.currentTarget.value as ProviderKind)}>
          {KINDS.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
      );
      break;
    case "honours_idempotency_key":
      input = (
        <input
          {...common}
          type="checkbox"
          checked={draft.honours_idempotency_key}
          onChange={(e) => set("honours_idempotency_key", e.currentTarget.checked)}
        />
      );
      break;
    case "supports_json_schema":
      input = (
        <select {...common} value={draft.supports_json_schema} onChange={(e) => set("supports_json_schema", e.currentTarget.value as ProviderDraft["supports_json_schema"])}>
          <option value="">unset (on)</option>
          <option value="true">on</option>
          <option value="false">off</option>
        </select>
      );
      break;
    case "tokenizer":
      input = (
        <select {...common} value={draft.tokenizer} onChange={(e) => set("tokenizer", e.currentTarget.value as ProviderDraft["tokenizer"])}>
          <option value="">unset</option>
          <option value="tiktoken">tiktoken (OpenAI's encodings)</option>
          <option value="llama_tokenize">llama_tokenize (the server's /tokenize)</option>
        </select>
      );
      break;
    default: {
      const numeric = field === "soft_timeout_ms" || field === "hard_timeout_ms" || field === "context_window" || field === "key_retention_s";
      input = (
        <input
          {...common}
          type="text"
          inputMode={numeric ? "numeric" : field.startsWith("price_per") ? "decimal" : undefined}
          spellCheck={false}
          // A provider's name is its identity: renaming would be another provider.
          readOnly={field === "name" && editing}
          value={draft[field]}
          onChange={(e) => set(field, e.currentTarget.value)}
        />
      );
    }
  }
  return (
    <FormRow prefix="provider" field={field} label={LABEL[field]} error={error} hint={explain(field, draft)}>
      {input}
    </FormRow>
  );
}
