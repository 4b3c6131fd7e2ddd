// The Spend screen (SPEC §17): what the owner's attempts cost, per day and per provider as a
// chart, since a chosen day; the money at risk now, with the unknown jobs it stands for one
// click away; and the budgets, each with its use in its period. Every amount is the ledger's
// exact decimal string: a bar's height is the only place one becomes a number.
import { useEffect, useState } from "react";
import { Bar, BarChart, CartesianGrid, Legend, Tooltip, XAxis, YAxis } from "recharts";

import { useRead } from "../api";
import { commands, type Spend, type SpendLine } from "../bindings";
import { Budgets } from "../components/Budgets";
import { ErrorBanner } from "../components/ErrorBanner";
import { currenciesNamed, isZero, money, plotted } from "../money";

interface Props {
  /** Opens the Jobs list filtered to `unknown` jobs: the ones whose money is at risk. */
  showUnknown: () => void;
}

export function SpendScreen({ showUnknown }: Props) {
  // A day as the date field holds it (`YYYY-MM-DD`); blank for every attempt ever sent.
  const [since, setSince] = useState("");
  // Null until the ledger says attempts were charged in several currencies.
  const [currency, setCurrency] = useState<string | null>(null);
  const [currencies, setCurrencies] = useState<string[]>([]);
  const from = since === "" ? null : since;
  // Money at risk now is every unknown attempt's, whenever it was sent.
  const now = useRead(() => commands.spend("provider", null, currency), [currency]);
  const byDay = useRead(() => commands.spend("day", from, currency), [from, currency]);
  const byProvider = useRead(() => commands.spend("provider", from, currency), [from, currency]);

  // Two currencies are never added: when the ledger names several, show one at a time.
  const named = currenciesNamed(now.error);
  useEffect(() => {
    if (named.length === 0) return;
    setCurrencies(named);
    setCurrency((chosen) => (chosen !== null && named.includes(chosen) ? chosen : (named[0] ?? null)));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [named.join(",")]);
  const error = [now.error, byDay.error, byProvider.error].find((e) => e !== null && currenciesNamed(e).length === 0);

  const total = now.data?.total ?? null;
  return (
    <section className="screen spend" aria-labelledby="spend-title">
      <div className="screen-head">
        <h2 id="spend-title">Spend</h2>
        <span className="spacer" />
        {currencies.length > 1 && (
          <label className="inline-field">
            <span className="label">Currency</span>
            <select
              value={currency ?? ""}
              onChange={(e) => setCurrency(e.currentTarget.value)}
              data-testid="spend-currency"
              title="Attempts were charged in several currencies; amounts of two are never added"
            >
              {currencies.map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
          </label>
        )}
        <label className="inline-field">
          <span className="label">Since</span>
          <input type="date" value={since} onChange={(e) => setSince(e.currentTarget.value)} data-testid="spend-since" />
        </label>
      </div>
      {currencies.length > 1 && (
        <p className="muted" data-testid="spend-currencies">
          Attempts were charged in {currencies.join(" and ")}. Amounts of two currencies are never added: this
          screen shows {currency ?? currencies[0]}.
        </p>
      )}
      {error !== undefined && error !== null && <ErrorBanner error={error} />}
      {now.data !== null && total === null && (
        <div className="empty" data-testid="spend-empty">
          <p className="empty-title">No attempt has been charged yet: give a provider a price.</p>
          <p className="muted">
            A provider with <code>{'"price": {"currency": "USD", "per_request": "0.01"}'}</code> in its configuration
            (on the Providers screen) charges each attempt sent to it; what they cost shows here.
          </p>
        </div>
      )}
      {total !== null && (
        <>
          <div className={isZero(total.at_risk) ? "at-risk-now" : "at-risk-now some"} data-testid="at-risk-now">
            <span className="label">Money at risk now</span>
            <strong className="amount" data-testid="at-risk-amount">
              {money(total.at_risk, total.currency)}
            </strong>
            {isZero(total.at_risk) ? (
              <span className="muted">No attempt is unknown.</span>
            ) : (
              <>
                <span className="muted">the worst case of every unknown attempt, until a person resolves it.</span>
                <button type="button" className="link" onClick={showUnknown} data-testid="show-unknown">
                  Show the unknown jobs
                </button>
              </>
            )}
          </div>
          {byDay.data !== null && byDay.data.total === null && from !== null && (
            <p className="muted" data-testid="spend-none-since">
              No attempt sent since {from} was charged.
            </p>
          )}
          {byDay.data?.total != null && (
            <p data-testid="spend-total">
              Spent{from === null ? "" : ` since ${from}`}: <strong className="amount">{money(byDay.data.total.spent, byDay.data.total.currency)}</strong>
            </p>
          )}
          <div className="spend-charts">
            <SpendChart title="Per day" spend={byDay.data} testId="spend-by-day" />
            <SpendChart title="Per provider" spend={byProvider.data} testId="spend-by-provider" />
          </div>
        </>
      )}
      <Budgets />
    </section>
  );
}

/** A chart's size: two stand side by side in the default window, one above the other in a narrow one. */
const CHART = { width: 480, height: 220 };

/** A line as a bar: heights as numbers for the chart, the ledger's strings for every word. */
interface Row {
  key: string;
  spent: number;
  atRisk: number;
  line: SpendLine;
}

/** One chart of spend, spent and at risk stacked, with its lines in words beneath. */
function SpendChart({ title, spend, testId }: { title: string; spend: Spend | null; testId: string }) {
  if (spend === null || spend.lines.length === 0) return <div />;
  const rows: Row[] = spend.lines.map((line) => ({
    key: line.key,
    spent: plotted(line.spent),
    atRisk: plotted(line.at_risk),
    line,
  }));
  return (
    <figure className="spend-chart" data-testid={testId}>
      <figcaption>
        <h3>{title}</h3>
      </figcaption>
      <BarChart width={CHART.width} height={CHART.height} data={rows} margin={{ top: 8, right: 8, bottom: 0, left: 0 }}>
        <CartesianGrid strokeDasharray="3 3" vertical={false} />
        <XAxis dataKey="key" tick={{ fontSize: 12 }} />
        <YAxis tick={{ fontSize: 12 }} width={56} />
        <Tooltip
          formatter={(_value, name, item) => {
            const line = (item.payload as Row).line;
            return [money(name === "spent" ? line.spent : line.at_risk, line.currency), name === "spent" ? "spent" : "at risk"];
          }}
        />
        <Legend verticalAlign="top" align="right" height={24} iconSize={10} wrapperStyle={{ fontSize: 12 }} />
        <Bar dataKey="spent" name="spent" stackId="cost" fill="var(--state-green)" maxBarSize={56} isAnimationActive={false} />
        <Bar dataKey="atRisk" name="at risk" stackId="cost" fill="var(--state-amber)" maxBarSize={56} isAnimationActive={false} />
      </BarChart>
      <table className="spend-lines">
        <thead>
          <tr>
            <th scope="col">{spend.by}</th>
            <th scope="col">spent</th>
            <th scope="col">at risk</th>
          </tr>
        </thead>
        <tbody>
          {spend.lines.map((line) => (
            <tr key={`${line.key} ${line.currency}`} data-key={line.key}>
              <td>{line.key}</td>
              <td className="amount">{money(line.spent, line.currency)}</td>
              <td className={isZero(line.at_risk) ? "amount" : "amount at-risk"}>{money(line.at_risk, line.currency)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
