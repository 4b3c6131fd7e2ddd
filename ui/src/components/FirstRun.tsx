// What a new user sees on an empty ledger: a walk to a first job against the built-in sandbox,
// then to making one time out and resolving it, and a contract tried on the sandbox in one click.
import { useState } from "react";

import { call } from "../api";
import { commands, type Check } from "../bindings";
import type { Shown } from "../errors";
import { ErrorBanner } from "./ErrorBanner";

/** The contract "Try a contract" saves and checks: a greeting held to a two-field schema. */
export const SAMPLE_CONTRACT = {
  name: "sandbox-sample",
  schema: {
    type: "object",
    properties: {
      greeting: { type: "string" },
      language: { type: "string", enum: ["en", "fr", "pl"] },
    },
    required: ["greeting", "language"],
  },
  template: { system: "You greet people in one short sentence.", user: "Greet {{name}}." },
  samples: [{ name: "Ada" }, { name: "Grace" }],
};

/** Where trying the sample contract has got to. */
type Trial =
  | { state: "idle" }
  | { state: "checking" }
  | { state: "checked"; check: Check }
  | { state: "error"; error: Shown };

export function FirstRun({ go }: { go: (screen: "submit" | "providers") => void }) {
  const [trial, setTrial] = useState<Trial>({ state: "idle" });

  const tryContract = async () => {
    setTrial({ state: "checking" });
    const saved = await call(() => commands.saveContract(JSON.stringify(SAMPLE_CONTRACT)));
    if (saved.status === "error") {
      setTrial({ state: "error", error: saved.error });
      return;
    }
    const checked = await call(() => commands.checkContract(SAMPLE_CONTRACT.name, "sandbox"));
    setTrial(checked.status === "ok" ? { state: "checked", check: checked.data } : { state: "error", error: checked.error });
  };

  return (
    <div className="empty first-run" data-testid="first-run">
      <p className="empty-title">No jobs yet. Three steps show what onejob is for:</p>
      <ol className="steps">
        <li>
          <strong>Submit a first job to the sandbox.</strong> The built-in sandbox is a real HTTP
          server on this machine; nothing leaves it.{" "}
          <button type="button" className="button primary" onClick={() => go("submit")}>
            Submit a job
          </button>{" "}
          Click Submit twice: the second click returns the same job.
        </li>
        <li>
          <strong>Make it time out.</strong> Set the sandbox&rsquo;s &ldquo;never answer&rdquo; dial
          to 1 and submit again: after the soft timeout the attempt is <em>unknown</em>, not failed,
          because the request may have gone through.{" "}
          <button type="button" className="button" onClick={() => go("providers")}>
            Open the dials
          </button>
        </li>
        <li>
          <strong>Resolve it.</strong> Open the unknown job and say what happened: it went through,
          it did not happen, or abandon it and allow a new attempt. Each says what it risks.
        </li>
      </ol>
      <p>
        <strong>Or try a contract.</strong> A contract holds an AI answer to a JSON Schema. The
        sandbox answers a job with a contract as a model would, with JSON made to fit the schema;
        its dials (extra key, prose, missing key, wrong type) break the answer the way a weaker
        model does.{" "}
        <button
          type="button"
          className="button"
          title={`Saves the contract ${SAMPLE_CONTRACT.name} (replacing one of that name) and checks it against the sandbox`}
          disabled={trial.state === "checking"}
          onClick={() => void tryContract()}
          data-testid="first-run-contract"
        >
          {trial.state === "checking" ? "Checking…" : "Try a contract"}
        </button>
      </p>
      {trial.state === "error" && <ErrorBanner error={trial.error} />}
      {trial.state === "checked" && <Checked check={trial.check} go={go} />}
      <p className="muted">
        The <code>onejob</code> command line shares this database: jobs it submits appear here too.
      </p>
    </div>
  );
}

/** The sample contract's check against the sandbox, and where to go from there. */
function Checked({ check, go }: { check: Check; go: (screen: "submit" | "providers") => void }) {
  const kept = check.samples.filter((s) => s.passed).length;
  return (
    <div className="first-run-check" data-testid="first-run-contract-result" data-passed={check.passed}>
      <p>
        <span className={`status ${check.passed ? "status-succeeded" : "status-failed"}`}>
          <span className="status-dot" aria-hidden="true" />
          {check.passed ? "passed" : "failed"}
        </span>{" "}
        The contract <code>{check.contract}</code> was checked against <code>{check.provider}</code>: {kept} of{" "}
        {check.samples.length} sample answers kept it.
      </p>
      {!check.passed && (
        <ul>
          {check.samples
            .filter((s) => !s.passed)
            .map((s, k) => (
              <li key={k} className="muted">
                {s.reason}
              </li>
            ))}
        </ul>
      )}
      <p>
        Now submit a job by it: on the Submit screen pick <code>{check.contract}</code> as the contract, fill in
        its field and keep <code>sandbox</code> as the route.{" "}
        <button type="button" className="button primary" onClick={() => go("submit")} data-testid="first-run-contract-submit">
          Submit by contract
        </button>{" "}
        The check and its samples are also on the Providers screen.
      </p>
    </div>
  );
}
