// The jobs list: one dense row per job.
import type { Job } from "../bindings";
import { exactTime, routeOf, shortId, timeAgo } from "../format";
import { StatusBadge } from "./StatusBadge";

interface Props {
  jobs: Job[];
  /** The time relative ages are measured from, in ms since the epoch. */
  now: number;
}

/** Id, key, status, route and age of each job, newest first as given. */
export function JobsTable({ jobs, now }: Props) {
  return (
    <table className="jobs">
      <thead>
        <tr>
          <th scope="col" className="col-id">
            Job
          </th>
          <th scope="col">Idempotency key</th>
          <th scope="col" className="col-status">
            Status
          </th>
          <th scope="col" className="col-route">
            Route
          </th>
          <th scope="col" className="col-created">
            Created
          </th>
        </tr>
      </thead>
      <tbody>
        {jobs.map((job) => (
          <tr key={job.id}>
            <td>
              <code className="id" title={job.id}>
                {shortId(job.id)}
              </code>
            </td>
            <td className="clip">
              <code className="key" title={job.idempotency_key}>
                {job.idempotency_key}
              </code>
            </td>
            <td>
              <StatusBadge status={job.status} />
              {job.flagged_for_review && (
                <span
                  className="flag"
                  title="A late answer or a contradiction that a person should look at"
                >
                  review
                </span>
              )}
            </td>
            <td className="clip route">{routeOf(job.intent).join(" → ")}</td>
            <td className="col-created">
              <time dateTime={job.created_at} title={exactTime(job.created_at)}>
                {timeAgo(job.created_at, now)}
              </time>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
