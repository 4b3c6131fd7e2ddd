// The Providers screen: add, edit and remove providers of every kind (never showing a key:
// only where it comes from), for the sandbox its fault dials, and the contracts with their
// editor and their last check per provider.
import { useState } from "react";

import { call, useLedger, useRead } from "../api";
import { commands, type Dials, type ProviderView, type Value } from "../bindings";
import { Contracts } from "../components/ContractChecks";
import { ErrorBanner } from "../components/ErrorBanner";
import { ProviderForm } from "../components/ProviderForm";
import { RemoveConfirm } from "../components/RemoveConfirm";
import type { Shown } from "../errors";
import { keyText, objectOf, PRICE_PARTS, takesKey } from "../forms/providerForm";
import { money } from "../money";

/** Which provider the form is open for: a new one, a configured one, or none. */
type Editing = { name: string | null } | null;

export function ProvidersScreen() {
  const providers = useRead(() => commands.providers(), []);
  const [editing, setEditing] = useState<Editing>(null);
  const edited = editing?.name === null ? null : (providers.data?.find((p) => p.name === editing?.name) ?? null);
  return (
    <section className="screen providers" aria-labelledby="providers-title">
      <div className="screen-head">
        <h2 id="providers-title">Providers</h2>
        <button type="button" className="button" onClick={() => setEditing({ name: null })} data-testid="provider-add">
          Add provider…
        </button>
      </div>
      {providers.error !== null && <ErrorBanner error={providers.error} />}
      {editing !== null && (editing.name === null || edited !== null) && (
        <ProviderForm key={editing.name ?? "new"} provider={edited} onDone={() => setEditing(null)} />
      )}
      {providers.data?.length === 0 && editing === null && (
        <p className="muted">No provider is configured. Add one here, or with <code>onejob provider add --json …</code>.</p>
      )}
      {providers.data?.map((p) => (
        <ProviderCard key={`${p.name}-${p.updated_at}`} provider={p} onEdit={() => setEditing({ name: p.name })} />
      ))}
      {providers.data !== null && <Contracts providers={providers.data.map((p) => p.name)} />}
    </section>
  );
}

function ProviderCard({ provider, onEdit }: { provider: ProviderView; onEdit: () => void }) {
  const { changed } = useLedger();
  const [removing, setRemoving] = useState(false);
  const rows: [string, string][] = [
    ["Kind", provider.kind],
    ["URL", provider.base_url ?? (provider.kind === "sandbox" ? "built in, on loopback" : "—")],
    ["Model", provider.model ?? "—"],
    ["Soft timeout", `${provider.soft_timeout_ms} ms (then the attempt is unknown)`],
    ["Hard deadline", `${provider.hard_timeout_ms} ms (then the connection is dropped)`],
    ["API key", takesKey(provider.kind) ? keyText(provider.key) : "none"],
    ["API key variable", provider.api_key_env === null ? "none" : `$${provider.api_key_env}`],
    ["Honours Idempotency-Key", provider.honours_idempotency_key ? "yes" : "no"],
    ["Key retention", retentionText(objectOf(provider.config)["key_retention_s"])],
    ["Status lookup", provider.status_url ?? "none: a person resolves unknown attempts"],
    ["Price", priceText(objectOf(provider.config)["price"])],
  ];
  return (
    <article className="card" data-provider={provider.name}>
      <div className="card-head">
        <h3>
          <code>{provider.name}</code>
        </h3>
        <span className="spacer" />
        <button type="button" className="button" onClick={onEdit} data-testid={`provider-edit-${provider.name}`}>
          Edit…
        </button>
        <button type="button" className="button danger" onClick={() => setRemoving(true)} data-testid={`provider-remove-${provider.name}`}>
          Remove…
        </button>
      </div>
      {removing && (
        <RemoveConfirm
          what="provider"
          name={provider.name}
          inUse={() => commands.providerInUse(provider.name)}
          remove={() => commands.removeProvider(provider.name)}
          onDone={(removed) => {
            setRemoving(false);
            if (removed) changed();
          }}
        />
      )}
      <dl className="facts">
        {rows.map(([k, v]) => (
          <FactRow key={k} label={k} value={v} />
        ))}
      </dl>
      {provider.dials !== null && <DialsForm provider={provider} dials={provider.dials} />}
    </article>
  );
}

/** A provider's key retention in words: how long unknown attempts are replayed under their key. */
function retentionText(seconds: Value | undefined): string {
  if (typeof seconds !== "number") return "none: unknown attempts are never sent again";
  const hours = seconds / 3600;
  return Number.isInteger(hours) ? `${seconds} s (${hours} h): unknown attempts are replayed under their key` : `${seconds} s: unknown attempts are replayed under their key`;
}

/** A provider's price in words (SPEC §17), each amount as the ledger holds it. */
function priceText(price: Value | undefined): string {
  const parts = objectOf(price ?? null);
  const currency = parts["currency"];
  if (typeof currency !== "string") return "none: what its attempts cost is not counted";
  const said = PRICE_PARTS.flatMap(([, part]) => {
    const amount = parts[part];
    return part === "currency" || typeof amount !== "string" ? [] : [`${money(amount, currency)} ${PRICED_PER[part]}`];
  });
  return said.join(", ");
}

/** What each amount of a price is charged for. */
const PRICED_PER = { per_request: "a request", per_1k_input_tokens: "per 1k input tokens", per_1k_output_tokens: "per 1k output tokens" } as const;

function FactRow({ label, value }: { label: string; value: string }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>{value}</dd>
    </>
  );
}

type Probability =
  | "never_answer"
  | "drop_after_processing"
  | "server_error"
  | "throttle"
  | "malformed_json"
  | "extra_key"
  | "prose"
  | "missing_required_key"
  | "wrong_type"
  | "slow_work";

const FAULTS: { dial: Probability; label: string }[] = [
  { dial: "never_answer", label: "Never answer (the attempt times out: unknown)" },
  { dial: "drop_after_processing", label: "Drop the answer after doing the work" },
  { dial: "server_error", label: "500 server error" },
  { dial: "throttle", label: "429 throttled" },
  { dial: "malformed_json", label: "Malformed JSON" },
  { dial: "extra_key", label: "An extra top-level key" },
  // A job with a contract is answered as a model would; these break that answer only.
  { dial: "prose", label: "Prose instead of JSON (jobs with a contract)" },
  { dial: "missing_required_key", label: "A required key missing (jobs with a contract)" },
  { dial: "wrong_type", label: "A value of the wrong type (jobs with a contract)" },
  { dial: "slow_work", label: "Slow work: done, answered only after the extra time below" },
];

/** The sandbox's dials and its timeouts, edited together and saved as one configuration. */
function DialsForm({ provider, dials }: { provider: ProviderView; dials: Dials }) {
  const { changed } = useLedger();
  const [form, setForm] = useState<Dials>(dials);
  const [soft, setSoft] = useState(provider.soft_timeout_ms);
  const [hard, setHard] = useState(provider.hard_timeout_ms);
  const [error, setError] = useState<Shown | null>(null);
  const [saved, setSaved] = useState(false);

  const save = () => {
    const base = provider.config !== null && typeof provider.config === "object" && !Array.isArray(provider.config) ? provider.config : {};
    const config: { [key: string]: Value } = { ...base, soft_timeout_ms: soft, hard_timeout_ms: hard, dials: form as { [key: string]: Value } };
    void call(() => commands.saveProvider(JSON.stringify(config))).then((r) => {
      setError(r.status === "error" ? r.error : null);
      setSaved(r.status === "ok");
      changed();
    });
  };
  const number = (value: string) => (value === "" ? 0 : Number(value));

  return (
    <form
      className="dials"
      aria-label={`Fault dials of ${provider.name}`}
      onSubmit={(e) => {
        e.preventDefault();
        save();
      }}
    >
      <h4>Fault dials</h4>
      <p className="muted">Each request rolls one fault at most; the probabilities add up and must not exceed 1.</p>
      <p className="muted">
        Slow work longer than the hard deadline leaves the attempt unknown while the work goes on; with a key retention set, the executor then sends it again under
        its key (409 while at work, the stored answer after) and the job settles by itself.
      </p>
      <div className="dial-grid">
        <label>
          Latency (ms)
          <input type="number" min={0} value={form.latency_ms ?? 0} data-dial="latency_ms" onChange={(e) => setForm({ ...form, latency_ms: number(e.currentTarget.value) })} />
        </label>
        <label>
          Jitter (ms)
          <input type="number" min={0} value={form.jitter_ms ?? 0} data-dial="jitter_ms" onChange={(e) => setForm({ ...form, jitter_ms: number(e.currentTarget.value) })} />
        </label>
        <label>
          Soft timeout (ms)
          <input type="number" min={1} value={soft} data-dial="soft_timeout_ms" onChange={(e) => setSoft(number(e.currentTarget.value))} />
        </label>
        <label>
          Hard deadline (ms)
          <input type="number" min={1} value={hard} data-dial="hard_timeout_ms" onChange={(e) => setHard(number(e.currentTarget.value))} />
        </label>
        {FAULTS.map(({ dial, label }) => (
          <label key={dial}>
            {label}
            <input
              type="number"
              min={0}
              max={1}
              step={0.05}
              value={form[dial] ?? 0}
              data-dial={dial}
              onChange={(e) => setForm({ ...form, [dial]: number(e.currentTarget.value) })}
            />
          </label>
        ))}
        <label>
          Slow work's extra time (ms)
          <input type="number" min={0} value={form.slow_work_ms ?? 15000} data-dial="slow_work_ms" onChange={(e) => setForm({ ...form, slow_work_ms: number(e.currentTarget.value) })} />
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={form.honour_idempotency_key ?? true}
            onChange={(e) => setForm({ ...form, honour_idempotency_key: e.currentTarget.checked })}
          />
          Honour Idempotency-Key (a repeat gets the first answer)
        </label>
      </div>
      {error !== null && <ErrorBanner error={error} />}
      <div className="actions">
        <button type="submit" className="button primary" data-testid={`save-${provider.name}`}>
          Save dials
        </button>
        {saved && <span className="muted">Saved; the next request uses them.</span>}
      </div>
    </form>
  );
}
