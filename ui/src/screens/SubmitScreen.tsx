// The Submit screen: one draft, one idempotency key per intent, however often Submit is
// clicked. An intent is written as JSON, or built by contract: the contract's {{fields}} become
// inputs and the route is picked from the configured providers; the JSON stays one click away.
// The draft lives above the screen (draftStore), so leaving and coming back changes nothing.
import { useState } from "react";

import { useLedger, useRead } from "../api";
import { commands, type ContractView } from "../bindings";
import { CopyId } from "../components/CopyId";
import { FieldError } from "../components/FormRow";
import { StatusBadge } from "../components/StatusBadge";
import { shownOutcomes, type Outcome } from "../draft";
import { editForm, editIntent, newDraft, showJson as setShowJson, submitDraft, useDraft } from "../draftStore";
import { existingJob, type Shown } from "../errors";
import { hasErrors, type FieldErrors } from "../forms/fields";
import { checkIntentForm, intentOf, validated, type IntentForm } from "../forms/intentForm";

export function SubmitScreen({ open }: { open: (jobId: string) => void }) {
  const draft = useDraft();
  const { form, showJson } = draft;
  const { changed } = useLedger();
  const providers = useRead(() => commands.providers(), []);
  const contracts = useRead(() => commands.contracts(), []);
  const [formErrors, setFormErrors] = useState<FieldErrors>({});
  const contract = contracts.data?.find((c) => c.name === form.contract) ?? null;
  const fields = contract?.fields ?? [];

  /** A change to the form: the intent is rebuilt from it, under the draft's key rules. */
  const onForm = (next: IntentForm) => {
    setFormErrors({});
    const chosen = contracts.data?.find((c) => c.name === next.contract) ?? null;
    if (chosen !== null) editIntent(intentOf(next, chosen.fields), next);
    else editForm(next);
  };

  const onSubmit = () => {
    if (contract !== null) {
      const found = checkIntentForm(form);
      setFormErrors(found);
      if (hasErrors(found)) return;
    }
    submitDraft(changed);
  };

  const names = providers.data?.map((p) => p.name) ?? [];
  return (
    <section className="screen submit" aria-labelledby="submit-title">
      <h2 id="submit-title">Submit a job</h2>
      <p className="muted">
        This draft has one idempotency key. Clicking Submit again sends the same key: you get
        the same job, never a second one. It stays while you visit other screens. Only a
        different intent gets a new key; rewriting it (spaces, key order) or editing it back
        keeps the key. To run the same intent again on purpose, start a new draft.
      </p>
      <div className="field">
        <span className="label">Idempotency key</span>
        <span className="draft-key">
          <CopyId value={draft.key} full testId="draft-key" />{" "}
          <button
            type="button"
            className="button"
            onClick={() => {
              setFormErrors({});
              newDraft();
            }}
            title="Keep what is written, with a new idempotency key: the next Submit makes a new job"
            data-testid="new-draft"
          >
            New draft
          </button>
        </span>
      </div>
      <label className="field">
        <span className="label">Contract — pick one to fill its fields in a form</span>
        <select
          value={form.contract}
          onChange={(e) => {
            const name = e.currentTarget.value;
            onForm({ ...form, contract: name, route: form.route.length > 0 ? form.route : names.slice(0, 1) });
          }}
          data-testid="submit-contract"
        >
          <option value="">none: write the intent as JSON</option>
          {contracts.data?.map((c) => (
            <option key={c.name} value={c.name}>
              {c.name}
            </option>
          ))}
        </select>
      </label>
      {contract !== null && (
        <ContractForm
          contract={contract}
          fields={fields}
          form={form}
          providers={names}
          errors={formErrors}
          onChange={onForm}
        />
      )}
      {contract !== null && (
        <label className="check">
          <input type="checkbox" checked={showJson} onChange={(e) => setShowJson(e.currentTarget.checked)} data-testid="submit-show-json" />{" "}
          Show the intent as JSON (editable; an edit here is what is submitted, until the form changes again)
        </label>
      )}
      {(contract === null || showJson) && (
        <label className="field">
          <span className="label">Intent (JSON: route, input, optional contract, params, max_attempts)</span>
          <textarea
            className="intent"
            spellCheck={false}
            rows={8}
            value={draft.intent}
            onChange={(e) => editIntent(e.currentTarget.value)}
            data-testid="intent"
          />
        </label>
      )}
      {contract === null && names.length > 0 && (
        <p className="muted">Providers you can route to: {names.map((n) => <code key={n} className="chip">{n}</code>)}</p>
      )}
      <div className="actions">
        <button type="button" className="button primary" onClick={onSubmit} data-testid="submit">
          Submit
        </button>
      </div>
      <ol className="outcomes" aria-live="polite" data-testid="outcomes">
        {shownOutcomes(draft).map((o) => (
          <li key={o.click} className={`outcome outcome-${o.kind}`} data-kind={o.kind}>
            <OutcomeLine outcome={o} open={open} />
          </li>
        ))}
      </ol>
    </section>
  );
}

/** The contract's fields as inputs, the route, and the optional budget and params. */
function ContractForm({
  contract,
  fields,
  form,
  providers,
  errors,
  onChange,
}: {
  contract: ContractView;
  fields: readonly string[];
  form: IntentForm;
  providers: string[];
  errors: FieldErrors;
  onChange: (form: IntentForm) => void;
}) {
  const unused = providers.filter((p) => !form.route.includes(p));
  const move = (i: number) => {
    const route = form.route.slice();
    const [p] = route.splice(i, 1);
    if (p !== undefined) route.splice(i - 1, 0, p);
    onChange({ ...form, route });
  };
  return (
    <div className="contract-form" data-testid="submit-form">
      {fields.length === 0 && <p className="muted">The template uses no field: the input is empty.</p>}
      {fields.map((f) => (
        <label key={f} className="field">
          <span className="label">
            <code>{f}</code>
          </span>
          <textarea
            rows={2}
            value={form.inputs[f] ?? ""}
            onChange={(e) => onChange({ ...form, inputs: { ...form.inputs, [f]: e.currentTarget.value } })}
            data-testid={`submit-field-${f}`}
          />
        </label>
      ))}
      <div className="field">
        <span className="label">Route — the primary first, then fallbacks in order</span>
        <ol className="route" data-testid="submit-route">
          {form.route.map((p, i) => {
            const ok = validated(contract, p);
            return (
              <li key={p} data-provider={p} data-validated={ok}>
                <code>{p}</code>{" "}
                {i === 0 ? (
                  <span className="muted">primary</span>
                ) : ok ? (
                  <span className="status-succeeded" data-testid={`submit-route-validated-${p}`}>validated fallback</span>
                ) : (
                  <span className="status-unknown" data-testid={`submit-route-unvalidated-${p}`}>not validated: no automatic failover</span>
                )}{" "}
                {i > 0 && (
                  <button type="button" className="icon-button" onClick={() => move(i)} data-testid={`submit-route-up-${p}`} aria-label={`Move ${p} up`}>
                    ↑
                  </button>
                )}
                <button
                  type="button"
                  className="icon-button"
                  onClick={() => onChange({ ...form, route: form.route.filter((x) => x !== p) })}
                  data-testid={`submit-route-remove-${p}`}
                  aria-label={`Remove ${p} from the route`}
                >
                  ×
                </button>
              </li>
            );
          })}
        </ol>
        {unused.length > 0 && (
          <select
            value=""
            onChange={(e) => e.currentTarget.value !== "" && onChange({ ...form, route: [...form.route, e.currentTarget.value] })}
            data-testid="submit-route-add"
          >
            <option value="">add a provider…</option>
            {unused.map((p) => (
              <option key={p} value={p}>
                {p} {validated(contract, p) ? "(validated)" : "(not validated)"}
              </option>
            ))}
          </select>
        )}
        <FieldError prefix="submit" field="route" error={errors["route"]} />
        <span className="hint">
          A job fails over by itself only to a provider whose last check of {contract.name} passed and still counts.
        </span>
      </div>
      <div className="two">
        <label className="field">
          <span className="label">max_attempts — every provider together; empty: 5</span>
          <input
            type="text"
            inputMode="numeric"
            value={form.maxAttempts}
            onChange={(e) => onChange({ ...form, maxAttempts: e.currentTarget.value })}
            data-testid="submit-max-attempts"
          />
          <FieldError prefix="submit" field="max_attempts" error={errors["max_attempts"]} />
        </label>
        <label className="field">
          <span className="label">params — a JSON object, such as {'{"temperature": 0}'}; optional</span>
          <input
            type="text"
            spellCheck={false}
            value={form.params}
            onChange={(e) => onChange({ ...form, params: e.currentTarget.value })}
            data-testid="submit-params"
          />
          <FieldError prefix="submit" field="params" error={errors["params"]} />
        </label>
      </div>
    </div>
  );
}

function OutcomeLine({ outcome, open }: { outcome: Outcome; open: (jobId: string) => void }) {
  if (outcome.kind === "error") {
    return <span>{explain(outcome.error)}</span>;
  }
  const { job } = outcome;
  return (
    <span>
      {outcome.kind === "submitted" ? "Submitted: new job " : "Already submitted: the same job "}
      <button type="button" className="link" onClick={() => open(job.id)} data-job-id={job.id}>
        <code>{job.id}</code>
      </button>{" "}
      <StatusBadge status={job.status} />
      {outcome.kind === "replayed" && (
        <span className="muted"> — this key was used before with this intent, so nothing new was started.</span>
      )}
    </span>
  );
}

/** A submit's error in words a person can act on. */
export function explain(error: Shown): string {
  switch (error.code) {
    case "idempotency_conflict": {
      const job = existingJob(error);
      const which = job === null ? "another job" : `job ${job}`;
      return `This key already belongs to ${which}, submitted with a different intent (${error.message}). Edit the intent, or click New draft, to start a new draft with a new key.`;
    }
    case "invalid_input":
      return `The intent is not valid: ${error.message}`;
    default:
      return `${error.code}: ${error.message}`;
  }
}
