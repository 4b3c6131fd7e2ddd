// A job's event history, read from the append-only job_events (SPEC §10).
import type { Attempt, ShownEvent, Value } from "../bindings";
import { exactTime, timeAgo } from "../format";
import { ValueView } from "./ValueView";

export function History({ jobId, events, attempts, now }: { jobId: string; events: ShownEvent[]; attempts: Attempt[]; now: number }) {
  const number = new Map(attempts.map((a) => [a.id, a.number]));
  return (
    <table className="history">
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Event</th>
          <th scope="col">Attempt</th>
          <th scope="col">By</th>
          <th scope="col">Detail</th>
        </tr>
      </thead>
      <tbody>
        {events.map((e, i) => (
          <tr key={i} data-kind={e.kind} className={notable(e) ? "notable" : undefined}>
            <td>
              <time dateTime={e.at} title={exactTime(e.at)}>{timeAgo(e.at, now)}</time>
            </td>
            <td><code>{e.kind}</code></td>
            <td>{e.attempt_id === null ? "" : `#${number.get(e.attempt_id) ?? "?"}`}</td>
            <td>{e.actor}</td>
            {e.detail.shown === "whole" ? (
              <td className="clip detail" title={JSON.stringify(e.detail.value)}>
                {detailText(e.detail.value)}
              </td>
            ) : (
              <td className="detail large">
                <ValueView
                  shown={e.detail}
                  jobId={jobId}
                  part={{ part: "event_detail", index: i }}
                  whole={(v) => <pre className="json">{JSON.stringify(v, null, 2)}</pre>}
                />
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** An event a person should look at: a race lost, a late answer, a replay the provider refused. */
function notable(e: ShownEvent): boolean {
  if (e.kind === "race_lost" || e.kind === "late_answer_flagged") return true;
  if (e.kind !== "replayed" || e.detail.shown !== "whole") return false;
  const detail = e.detail.value;
  return detail !== null && typeof detail === "object" && !Array.isArray(detail) && detail["outcome"] === "flagged";
}

function detailText(detail: Value): string {
  if (detail === null || typeof detail !== "object" || Array.isArray(detail)) return JSON.stringify(detail);
  return Object.entries(detail)
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" · ");
}
