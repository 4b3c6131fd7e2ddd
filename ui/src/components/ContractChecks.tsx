// Contracts on the Providers screen: add, edit and remove them; the last check of each
// contract per provider, its per-sample results, and a button that runs a new check (SPEC §8, §13).
import { useState } from "react";

import { call, useLedger, useNow, useRead } from "../api";
import { commands, type Check, type ContractView, type SampleResult } from "../bindings";
import { exactTime, shortId, timeAgo } from "../format";
import type { Shown } from "../errors";
import { ContractEditor } from "./ContractEditor";
import { ErrorBanner } from "./ErrorBanner";
import { RemoveConfirm } from "./RemoveConfirm";

/** Every contract, each with a row per configured provider and per provider it was checked with. */
export function Contracts({ providers }: { providers: string[] }) {
  const contracts = useRead(() => commands.contracts(), []);
  // Which contract the editor is open for: a new one (null name), a listed one, or none.
  const [editing, setEditing] = useState<{ name: string | null } | null>(null);
  const edited = editing?.name === null ? null : (contracts.data?.find((c) => c.name === editing?.name) ?? null);
  return (
    <section className="contracts" aria-labelledby="contracts-title">
      <div className="screen-head">
        <h2 id="contracts-title">Contracts</h2>
        <button type="button" className="button" onClick={() => setEditing({ name: null })} data-testid="contract-add">
          Add contract…
        </button>
      </div>
      {contracts.error !== null && <ErrorBanner error={contracts.error} />}
      {editing !== null && (editing.name === null || edited !== null) && (
        <ContractEditor key={editing.name ?? "new"} contract={edited} onDone={() => setEditing(null)} />
      )}
      {contracts.data?.length === 0 && editing === null && (
        <p className="muted">No contract is configured. Add one here, or with <code>onejob contract add --json …</code>.</p>
      )}
      {contracts.data?.map((c) => (
        <ContractCard key={c.name} contract={c} providers={providers} onEdit={() => setEditing({ name: c.name })} />
      ))}
    </section>
  );
}

function ContractCard({ contract, providers, onEdit }: { contract: ContractView; providers: string[]; onEdit: () => void }) {
  const { changed } = useLedger();
  const [removing, setRemoving] = useState(false);
  // Checks against a provider since removed stay visible after the configured ones.
  const names = [...providers, ...contract.checks.map((c) => c.provider).filter((p) => !providers.includes(p))];
  return (
    <article className="card" data-contract={contract.name}>
      <div className="card-head">
        <h3>
          <code>{contract.name}</code>{" "}
          <code className="muted" title={`Content hash ${contract.hash}`}>
            {shortId(contract.hash)}
          </code>
        </h3>
        <span className="spacer" />
        <button type="button" className="button" onClick={onEdit} data-testid={`contract-edit-${contract.name}`}>
          Edit…
        </button>
        <button type="button" className="button danger" onClick={() => setRemoving(true)} data-testid={`contract-remove-${contract.name}`}>
          Remove…
        </button>
      </div>
      {removing && (
        <RemoveConfirm
          what="contract"
          name={contract.name}
          inUse={() => commands.contractInUse(contract.name)}
          remove={() => commands.removeContract(contract.name)}
          onDone={(removed) => {
            setRemoving(false);
            if (removed) changed();
          }}
        />
      )}
      <p className="muted">
        Input fields:{" "}
        {contract.fields.length === 0 ? "none" : contract.fields.map((f) => <code key={f} className="chip">{f}</code>)}
      </p>
      {names.length === 0 && <p className="muted">No provider to check it against.</p>}
      {names.map((provider) => (
        <ProviderCheck
          key={provider}
          contract={contract}
          provider={provider}
          check={contract.checks.find((c) => c.provider === provider) ?? null}
          configured={providers.includes(provider)}
        />
      ))}
    </article>
  );
}

/** The last check of one contract against one provider, and the button that runs a new one. */
export function ProviderCheck({
  contract,
  provider,
  check,
  configured,
}: {
  contract: ContractView;
  provider: string;
  check: Check | null;
  configured: boolean;
}) {
  const { changed } = useLedger();
  const [ran, setRan] = useState<Check | null>(null);
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<Shown | null>(null);

  const run = () => {
    setRunning(true);
    void call(() => commands.checkContract(contract.name, provider)).then((r) => {
      setRunning(false);
      setError(r.status === "error" ? r.error : null);
      if (r.status === "ok") setRan(r.data);
      changed();
    });
  };
  // The check just run shows at once; the listed one takes over when it is as new.
  const shown = ran !== null && (check === null || ran.checked_at > check.checked_at) ? ran : check;
  const risk = `Sends every sample of ${contract.name} to ${provider} at temperature 0; a paid provider charges for each.`;

  return (
    <div className="contract-check" data-check={`${contract.name}/${provider}`}>
      <h4>
        <code>{provider}</code>
        {!configured && <span className="muted"> (no longer configured)</span>}
      </h4>
      {shown === null ? <p className="muted">Never checked.</p> : <CheckResult check={shown} contract={contract} />}
      {error !== null && <ErrorBanner error={error} />}
      {configured && (
        <div className="actions">
          <button
            type="button"
            className="button"
            title={risk}
            disabled={running}
            onClick={run}
            data-testid={`run-check-${contract.name}-${provider}`}
          >
            {running ? "Checking…" : "Run check"}
          </button>
          <span className="muted">{risk}</span>
        </div>
      )}
    </div>
  );
}

/** Whether a check passed, when, whether it still counts, and how each sample fared. */
export function CheckResult({ check, contract }: { check: Check; contract: ContractView }) {
  const now = useNow(30_000);
  return (
    <div className="check-result" data-check-id={check.id}>
      <p>
        <span className={`status ${check.passed ? "status-succeeded" : "status-failed"}`}>
          <span className="status-dot" aria-hidden="true" />
          {check.passed ? "passed" : "failed"}
        </span>{" "}
        <span className="muted" title={exactTime(check.checked_at)}>
          {timeAgo(check.checked_at, now)}
        </span>
      </p>
      <p data-testid="check-counts" className={check.current ? "" : "muted"}>
        {counts(check)}
      </p>
      <p className="muted">
        Checked under contract hash <code title={check.contract_hash}>{shortId(check.contract_hash)}</code> (now{" "}
        <code title={contract.hash}>{shortId(contract.hash)}</code>) and the provider as configured at{" "}
        <span title={check.provider_updated_at}>{exactTime(check.provider_updated_at)}</span>.
      </p>
      <table className="samples">
        <thead>
          <tr>
            <th>Sample</th>
            <th>Result</th>
            <th>Latency</th>
            <th>Prompt tokens</th>
            <th>Reason</th>
          </tr>
        </thead>
        <tbody>
          {check.samples.map((s, k) => (
            <SampleRow key={k} n={k + 1} sample={s} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** What the engine's `current` flag means for this check, in words. */
function counts(check: Check): string {
  if (check.current) return `Counts: a job may fail over to ${check.provider} by itself.`;
  if (!check.passed) return "Does not count: it failed.";
  return "No longer counts: the contract or the provider changed since it was checked. Run it again.";
}

function SampleRow({ n, sample }: { n: number; sample: SampleResult }) {
  const tokens =
    sample.prompt_tokens === null
      ? "not checked"
      : `${sample.prompt_tokens}${sample.context_window === null ? "" : ` of ${sample.context_window}`}`;
  return (
    <tr data-sample={n} className={sample.passed ? "" : "failed"}>
      <td>#{n}</td>
      <td className={sample.passed ? "status-succeeded" : "status-failed"}>{sample.passed ? "passed" : "failed"}</td>
      <td>{sample.latency_ms === null ? "not sent" : `${sample.latency_ms} ms`}</td>
      <td title={sample.tokenizer}>{tokens}</td>
      <td className="reason">{sample.reason}</td>
    </tr>
  );
}
