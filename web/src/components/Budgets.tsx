import { useCallback, useState } from 'react';
import type { BudgetInfo, ParleyClient } from 'parley/client';
import { sessionEventOf, useLiveRefresh } from '../live';
import { explainRequestError, formatCost } from '../words';

/** How often the page reads the budgets while the live stream is down. */
const pollMs = 5000;
const spendingEvents = sessionEventOf(
  'turn_started',
  'done',
  'cancelled',
  'error',
  'input_required',
);

const units = { tokens: 'tokens', tool_calls: 'tool calls', wall_ms: 'ms' } as const;

function amount(budget: BudgetInfo, value: number): string {
  if (budget.metric === 'cost_usd') return formatCost(value);
  return `${Math.round(value).toLocaleString()} ${units[budget.metric]}`;
}

function scopeOf(budget: BudgetInfo): string {
  return budget.scope === 'tenant' ? 'the whole tenant' : `${budget.scope} ${budget.scope_id}`;
}

/**
 * The tenant's spending budgets (GET /api/v1/budgets, admins): each one's limit, what it
 * used in the current period and what model calls in flight hold reserved, read again as
 * turns start and end (the user stream). Editing stays with the API and the CLI.
 */
export function Budgets(props: { client: ParleyClient }) {
  const { client } = props;
  const [items, setItems] = useState<BudgetInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(
    () =>
      client.listBudgets().then(
        (answer) => {
          setItems(answer.items);
          setError(null);
        },
        (failure: unknown) => setError(explainRequestError(failure)),
      ),
    [client],
  );
  // What is used and held changes when a turn starts a model call and when it ends.
  useLiveRefresh(load, spendingEvents, { fallbackMs: pollMs, gapMs: 500 });

  return (
    <section className="budgets" aria-label="Budgets">
      <h2>Budgets</h2>
      <p className="muted small">
        Spending limits of this tenant. A model call that would go past one waits for an admin to
        allow it.
      </p>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      {items === null && !error ? <p className="muted">Loading…</p> : null}
      {items !== null && items.length === 0 ? <p className="empty">No budgets are set.</p> : null}
      {items !== null && items.length > 0 ? (
        <table className="budget-table">
          <thead>
            <tr>
              <th scope="col">Budget</th>
              <th scope="col">For</th>
              <th scope="col">Per</th>
              <th scope="col">Limit</th>
              <th scope="col">Used</th>
              <th scope="col">Reserved</th>
            </tr>
          </thead>
          <tbody>
            {items.map((budget) => (
              <tr key={budget.budget_id}>
                <th scope="row">{budget.budget_id}</th>
                <td>{scopeOf(budget)}</td>
                <td>{budget.period}</td>
                <td>{amount(budget, budget.limit)}</td>
                <td>{budget.used === null ? 'per turn' : amount(budget, budget.used)}</td>
                <td>{amount(budget, budget.reserved)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
