// What a new user sees on an empty ledger: a walk to a first job against the built-in sandbox,
// then to making one time out and resolving it.

export function FirstRun({ go }: { go: (screen: "submit" | "providers") => void }) {
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
      <p className="muted">
        The <code>onejob</code> command line shares this database: jobs it submits appear here too.
      </p>
    </div>
  );
}
