// The attempt timeline: one bar per attempt from created to finished, coloured by state, with
// a live clock on open ones. Two bars that overlap are a race, visible at a glance.
import type { Attempt, Cost, Usage } from "../bindings";
import { exactTime } from "../format";
import { costWords, isZero } from "../money";

const OPEN = new Set(["pending", "in_flight", "unknown"]);

/** "4.2 s", "3 min 05 s": how long an attempt has been open or took. */
export function duration(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  const rest = Math.floor(s % 60);
  return `${m} min ${rest.toString().padStart(2, "0")} s`;
}

/** "120 in / 48 out tokens", or nothing when the provider reported no usage. */
export function tokens(usage: Usage | null): string {
  return usage === null ? "" : `${usage.prompt_tokens} in / ${usage.completion_tokens} out tokens`;
}

/**
 * What an attempt cost, as the ledger counted it: "0.05 USD", or "0.05 USD at risk" while it is
 * unknown; nothing at a provider without a price.
 */
function AttemptCost({ cost }: { cost: Cost | null | undefined }) {
  if (cost === null || cost === undefined) return <span className="timeline-cost" />;
  const risky = !isZero(cost.at_risk);
  return (
    <span
      className={risky ? "timeline-cost at-risk" : "timeline-cost"}
      data-testid="attempt-cost"
      title={risky ? "Its worst case, at risk until it is resolved" : "What it cost at the price it was sent at"}
    >
      {risky ? costWords(cost) : `${cost.spent} ${cost.currency}`}
    </span>
  );
}

export function Timeline({ attempts, now }: { attempts: Attempt[]; now: number }) {
  if (attempts.length === 0) {
    return <p className="muted">No attempt yet: the executor starts one as soon as it can.</p>;
  }
  const start = Math.min(...attempts.map((a) => Date.parse(a.created_at)));
  const end = Math.max(
    ...attempts.map((a) => (a.finished_at === null || OPEN.has(a.state) ? now : Date.parse(a.finished_at))),
    start + 1000,
  );
  const span = end - start;
  return (
    <ol className="timeline" aria-label="Attempts">
      {attempts.map((a) => {
        const from = Date.parse(a.created_at);
        const open = OPEN.has(a.state);
        const to = open || a.finished_at === null ? now : Date.parse(a.finished_at);
        const left = ((from - start) / span) * 100;
        const width = Math.max(0.6, ((to - from) / span) * 100);
        return (
          <li key={a.id} className="timeline-row" data-attempt-id={a.id} data-state={a.state}>
            <span className="timeline-label">
              #{a.number} <span className="muted">{a.provider}</span>
            </span>
            <span className="timeline-track">
              <span
                className={`timeline-bar state-${a.state}${open ? " open" : ""}`}
                style={{ left: `${left}%`, width: `${width}%` }}
                title={`${a.state}: ${exactTime(a.created_at)} → ${a.finished_at === null ? "still open" : exactTime(a.finished_at)}`}
              />
            </span>
            <span className={`timeline-state state-text-${a.state}`}>
              {a.state.replace("_", " ")}
              {a.flagged_for_review && <span className="flag">review</span>}
            </span>
            <span className={open ? "timeline-clock live" : "timeline-clock"} data-testid={open ? "live-clock" : undefined}>
              {duration(to - from)}
            </span>
            <span className="timeline-tokens muted" data-testid="attempt-tokens" title="Tokens the provider reported for this attempt">
              {tokens(a.usage)}
            </span>
            <AttemptCost cost={a.cost} />
          </li>
        );
      })}
    </ol>
  );
}
