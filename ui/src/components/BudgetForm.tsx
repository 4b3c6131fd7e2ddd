// Sets a budget (SPEC §17): its name, limit, currency and period, and what it covers (a
// provider, an owner), each field explained, checked before anything is sent, with the
// engine's own errors beside the field they name.
import { useState } from "react";

import { call, useLedger, useRead } from "../api";
import { commands, type Budget, type BudgetPeriod } from "../bindings";
import {
  BUDGET_FIELDS,
  BUDGET_HINT,
  BUDGET_LABEL,
  budgetJson,
  checkBudget,
  draftOfBudget,
  type BudgetDraft,
  type BudgetField,
} from "../forms/budgetForm";
import { hasErrors, placeError, type FieldErrors } from "../forms/fields";
import { EditorForm } from "./EditorForm";
import { FormRow, inputProps } from "./FormRow";

interface Props {
  /** The budget set again, or null for a new one. */
  budget: Budget | null;
  onDone: () => void;
}

export function BudgetForm({ budget, onDone }: Props) {
  const { changed } = useLedger();
  const [draft, setDraft] = useState<BudgetDraft>(() => draftOfBudget(budget));
  const [errors, setErrors] = useState<FieldErrors>({});
  const [busy, setBusy] = useState(false);
  const providers = useRead(() => commands.providers(), []);
  // A budget may name a provider that was removed since: it stays a choice.
  const named = providers.data?.map((p) => p.name) ?? [];
  const offered = draft.provider === "" || named.includes(draft.provider) ? named : [...named, draft.provider];

  const set = (field: BudgetField, value: string) => {
    setDraft((d) => ({ ...d, [field]: value }));
    setErrors((e) => ({ ...e, [field]: undefined, form: undefined }));
  };

  const save = async () => {
    const found = checkBudget(draft);
    setErrors(found);
    if (hasErrors(found)) return;
    setBusy(true);
    const saved = await call(() => commands.setBudget(draft.name, budgetJson(draft)));
    setBusy(false);
    if (saved.status === "error") {
      setErrors(placeError(saved.error, "budget", BUDGET_FIELDS));
      return;
    }
    changed();
    onDone();
  };

  const input = (field: BudgetField) => {
    const common = inputProps("budget", field, errors[field]);
    switch (field) {
      case "period":
        return (
          <select {...common} value={draft.period} onChange={(e) => set("period", e.currentTarget.value as BudgetPeriod)}>
            <option value="day">a day (UTC)</option>
            <option value="month">a month (UTC)</option>
          </select>
        );
      case "provider":
        return (
          <select {...common} value={draft.provider} onChange={(e) => set("provider", e.currentTarget.value)}>
            <option value="">every provider</option>
            {offered.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        );
      default:
        return (
          <input
            {...common}
            type="text"
            spellCheck={false}
            inputMode={field === "limit" ? "decimal" : undefined}
            placeholder={field === "owner" ? "every owner" : undefined}
            // A budget's name is its identity: renaming would be another budget.
            readOnly={field === "name" && budget !== null}
            value={draft[field]}
            onChange={(e) => set(field, e.currentTarget.value)}
          />
        );
    }
  };

  return (
    <EditorForm
      noun="budget"
      name={budget?.name ?? null}
      busy={busy}
      formError={errors["form"]}
      note={<p className="muted">Set again, a budget keeps counting what its period has already spent.</p>}
      onSave={save}
      onClose={onDone}
    >
      <div className="form-grid">
        {BUDGET_FIELDS.map((field) => (
          <FormRow key={field} prefix="budget" field={field} label={BUDGET_LABEL[field]} error={errors[field]} hint={BUDGET_HINT[field]}>
            {input(field)}
          </FormRow>
        ))}
      </div>
    </EditorForm>
  );
}
