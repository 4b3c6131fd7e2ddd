// What is known of an `unknown` attempt (SPEC §16), beside the three ways to resolve it: when it
// was sent and by which executor, what was sent, what came back, the rule that made it unknown,
// and every lookup and replay since. The body sent is read only when asked for.
import { useState } from "react";

import { call } from "../api";
import { commands, type Known, type Value } from "../bindings";
import type { Shown } from "../errors";
import { byteSize, exactTime } from "../format";
import { ErrorBanner } from "./ErrorBanner";

export function WhatIsKnown({ jobId, known }: { jobId: string; known: Known | undefined }) {
  if (known === undefined) {
    return (
      <aside className="known" aria-label="What is known" data-testid="what-is-known">
        <h4>What is known</h4>
        <p className="muted">Nothing more was recorded of this attempt.</p>
      </aside>
    );
  }
  const { sent, received, rule, tried } = known;
  return (
    <aside className="known" aria-label="What is known" data-testid="what-is-known">
      <h4>What is known</h4>
      <dl className="facts">
        <dt>Why unknown</dt>
        <dd data-testid="known-rule">
          {rule === null ? (
            <span className="muted">not recorded</span>
          ) : (
            <>
              <code>{rule.code}</code> {rule.says}
            </>
          )}
        </dd>
        {sent === null ? (
          <>
            <dt>Sent</dt>
            <dd className="muted" data-testid="known-sent">
              Not recorded: the attempt was sent before its requests were recorded, or by hand.
            </dd>
          </>
        ) : (
          <>
            <dt>Sent</dt>
            <dd data-testid="known-sent">
              {sent.at === null ? "at a time not recorded" : <time dateTime={sent.at}>{exactTime(sent.at)}</time>} by executor{" "}
              <code>{sent.executor_id}</code>
            </dd>
            <dt>Request</dt>
            <dd data-testid="known-request">
              <code>
                {sent.method} {sent.url}
              </code>
              <Headers headers={sent.headers} testId="known-request-headers" />
            </dd>
            <dt>Body</dt>
            <dd data-testid="known-body">
              {byteSize(sent.body_bytes)}, SHA-256 <code className="hash">{sent.body_sha256}</code>
              <SentBody jobId={jobId} number={known.number} />
            </dd>
          </>
        )}
        <dt>Came back</dt>
        <dd data-testid="known-received">
          {received !== null ? (
            <>
              HTTP <strong>{received.status}</strong>, {byteSize(received.bytes)} of body received
              <Headers headers={received.headers} testId="known-response-headers" />
            </>
          ) : known.watched ? (
            "Nothing: no response arrived before the connection ended."
          ) : (
            <span className="muted">
              Not known: its sender stopped (or is still waiting) before it could record what came back.
            </span>
          )}
        </dd>
        <dt>Lookups and replays</dt>
        <dd data-testid="known-tried">
          {tried.length === 0 ? (
            <span className="muted">None yet.</span>
          ) : (
            <ol className="known-tried">
              {tried.map((t, k) => (
                <li key={k} data-testid="known-try">
                  <time dateTime={t.at}>{exactTime(t.at)}</time> <code>{t.kind}</code> {answerText(t.answer)}
                </li>
              ))}
            </ol>
          )}
        </dd>
      </dl>
    </aside>
  );
}

function Headers({ headers, testId }: { headers: Partial<Record<string, string>>; testId: string }) {
  const names = Object.keys(headers);
  if (names.length === 0) return null;
  return (
    <ul className="known-headers" data-testid={testId}>
      {names.map((name) => (
        <li key={name}>
          <code>
            {name}: {headers[name]}
          </code>
        </li>
      ))}
    </ul>
  );
}

/** The body as sent, one click away. */
function SentBody({ jobId, number }: { jobId: string; number: number }) {
  // Wrapped, since the body may itself be null.
  const [body, setBody] = useState<{ value: Value } | null>(null);
  const [error, setError] = useState<Shown | null>(null);
  const [busy, setBusy] = useState(false);

  const show = async () => {
    setBusy(true);
    const read = await call(() => commands.jobPart(jobId, { part: "sent_body", number }));
    setBusy(false);
    setError(read.status === "error" ? read.error : null);
    if (read.status === "ok") setBody({ value: read.data });
  };

  return (
    <div>
      {error !== null && <ErrorBanner error={error} />}
      {body === null ? (
        <button type="button" className="button" disabled={busy} onClick={() => void show()} data-testid="show-sent-body">
          Show the body sent
        </button>
      ) : (
        <pre className="json" data-testid="sent-body">
          {JSON.stringify(body.value, null, 2)}
        </pre>
      )}
    </div>
  );
}

/** A try's answer: its outcome and answer fields as JSON, or its detail as the text it is. */
function answerText(answer: Value): string {
  return typeof answer === "string" ? answer : JSON.stringify(answer);
}
