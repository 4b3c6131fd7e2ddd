// The Spend screen's budgets (SPEC §17): each with what it covers, its period and currency, and
// what it holds in its period against its limit; a form to set one, and removal after a
// question. Amounts are the ledger's exact strings; only the bar's length is a number.
import { useState } from "react";

import { useLedger, useRead } from "../api";
import { commands, type Budget } from "../bindings";
import { atLeast, filled, money } from "../money";
import { BudgetForm } from "./BudgetForm";
import { ErrorBanner } from "./ErrorBanner";
import { RemoveConfirm } from "./RemoveConfirm";

/** Which budget the form is open for: a new one, a listed one, or none. */
type Editing = { budget: Budget | null } | null;

export function Budgets() {
  const budgets = useRead(() => commands.budgets(), []);
  const [editing, setEditing] = useState<Editing>(null);
  return (
    <section className="budgets" aria-labelledby="budgets-title" data-testid="budgets">
      <div className="screen-head">
        <h3 id="budgets-title">Budgets</h3>
        <span className="spacer" />
        <button type="button" className="button" onClick={() => setEditing({ budget: null })} data-testid="budget-add">
          Set a budget…
        </button>
      </div>
      <p className="muted">
        Each attempt's worst case is held against every budget that covers it as it is sent; one that would pass a
        budget is not sent, and its job waits, queued, for the budget's next period.
      </p>
      {budgets.error !== null && <ErrorBanner error={budgets.error} />}
      {editing !== null && (
        <BudgetForm key={editing.budget?.name ?? "new"} budget={editing.budget} onDone={() => setEditing(null)} />
      )}
      {budgets.data?.length === 0 && editing === null && (
        <p className="muted" data-testid="budgets-none">
          No budget is set: attempts are sent whatever they cost.
        </p>
      )}
      {budgets.data !== null && budgets.data.length > 0 && (
        <ul className="budget-list">
          {budgets.data.map((b) => (
            <BudgetRow key={`${b.name}-${b.updated_at}`} budget={b} onEdit={() => setEditing({ budget: b })} />
          ))}
        </ul>
      )}
    </section>
  );
}

/** What a budget covers, in words: "local's jobs at sandbox", "every owner's jobs at every provider". */
export function scopeText(budget: Budget): string {
  const owner = budget.owner === null ? "every owner's jobs" : `${budget.owner}'s jobs`;
  const provider = budget.provider === null ? "every provider" : budget.provider;
  return `${owner} at ${provider}`;
}

function BudgetRow({ budget, onEdit }: { budget: Budget; onEdit: () => void }) {
  const { changed } = useLedger();
  const [removing, setRemoving] = useState(false);
  const reached = atLeast(budget.used, budget.limit);
  const share = filled(budget.used, budget.limit);
  return (
    <li className={reached ? "card budget reached" : "card budget"} data-budget={budget.name}>
      <div className="budget-head">
        <code className="budget-name">{budget.name}</code>
        <span data-testid="budget-scope">{scopeText(budget)}</span>
        <span className="muted" data-testid="budget-period">
          a {budget.period} (UTC), in {budget.currency}
        </span>
        <span className="spacer" />
        <button type="button" className="button" onClick={onEdit} data-testid={`budget-edit-${budget.name}`}>
          Edit…
        </button>
        <button type="button" className="button danger" onClick={() => setRemoving(true)} data-testid={`budget-remove-${budget.name}`}>
          Remove…
        </button>
      </div>
      <div className="budget-use">
        <div
          className="budget-bar"
          role="meter"
          aria-label={`${budget.name}: used this ${budget.period}`}
          aria-valuemin={0}
          aria-valuemax={100}
          aria-valuenow={Math.floor(share * 100)}
        >
          <div className="budget-fill" style={{ width: `${share * 100}%` }} />
        </div>
        <span className="amount" data-testid="budget-use">
          {budget.used} / {money(budget.limit, budget.currency)}
        </span>
        <span className="muted" data-testid="budget-state">
          {reached
            ? `reached: what it covers waits for the next ${budget.period}`
            : `${Math.floor(share * 100)}% used this ${budget.period}`}
        </span>
      </div>
      {removing && (
        <RemoveConfirm
          what="budget"
          name={budget.name}
          effect="Attempts it covers are no longer held against it; a job it kept back still waits for the time it was given."
          remove={() => commands.removeBudget(budget.name)}
          onDone={(removed) => {
            setRemoving(false);
            if (removed) changed();
          }}
        />
      )}
    </li>
  );
}
