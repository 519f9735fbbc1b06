import { useCallback, useState } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, Tooltip, XAxis, YAxis } from 'recharts';
import type { ParleyClient } from 'parley/client';
import { explainRequestError, formatCost, formatTokens } from '../../words';
import { usageReport, type UsageTotals } from './desktopApi';
import { usePoll } from './poll';
import { DeskPanel } from './DeskPanel';

const pollMs = 60_000;

type Metric = 'tokens' | 'cost' | 'calls';

interface Row {
  key: string;
  input: number;
  output: number;
  cost: number;
  calls: number;
}

function rowOf(key: string, totals: UsageTotals): Row {
  return {
    key,
    input: totals.input_tokens,
    output: totals.output_tokens,
    cost: totals.cost_usd,
    calls: totals.calls,
  };
}

const dayMs = 86_400_000;

/**
 * The last `count` UTC days, oldest first (the days `group_by=day` reports): each one's
 * key (`YYYY-MM-DD`) and label, and the period's start and end.
 */
function days(
  count: number,
  now = new Date(),
): { days: { key: string; label: string }[]; from: string; to: string } {
  const tomorrow = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  const from = tomorrow - count * dayMs;
  return {
    days: Array.from({ length: count }, (_, index) => {
      const start = new Date(from + index * dayMs);
      return {
        key: start.toISOString().slice(0, 10),
        label: start.toLocaleDateString(undefined, {
          month: 'short',
          day: 'numeric',
          timeZone: 'UTC',
        }),
      };
    }),
    from: new Date(from).toISOString(),
    to: new Date(tomorrow).toISOString(),
  };
}

interface Loaded {
  perDay: Row[];
  perAgent: Row[];
  perModel: Row[];
  perUser: Row[];
  total: Row;
}

const noUsage: UsageTotals = {
  calls: 0,
  input_tokens: 0,
  output_tokens: 0,
  cached_input_tokens: 0,
  reasoning_tokens: 0,
  cost_usd: 0,
};

/**
 * Tokens, cost and calls as charts (recharts): per UTC day, per agent, per model and per
 * user, over the last 7 or 30 days, from GET /api/v1/usage (admins): one report per
 * grouping over the whole period (a day without usage is a zero bar).
 */
export function UsageCharts(props: { client: ParleyClient; admin: boolean }) {
  const { client, admin } = props;
  const [span, setSpan] = useState(7);
  const [metric, setMetric] = useState<Metric>('tokens');
  const [data, setData] = useState<Loaded | null>(null);
  const [progress, setProgress] = useState<{ done: number; of: number } | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(
    async (current: () => boolean) => {
      if (!admin) return;
      const range = days(span);
      const { from, to } = range;
      const of = 4;
      let done = 0;
      const step = <T,>(promise: Promise<T>) =>
        promise.then((value) => {
          done += 1;
          if (current()) setProgress({ done, of });
          return value;
        });
      if (current()) setProgress({ done: 0, of });
      try {
        const [byAgent, byModel, byUser, byDay] = await Promise.all(
          (['agent', 'model', 'user', 'day'] as const).map((group_by) =>
            step(usageReport(client, { group_by, from, to })),
          ),
        );
        if (!current() || !byAgent || !byModel || !byUser || !byDay) return;
        const perDay = new Map(byDay.items.map((item) => [item.key, item]));
        setData({
          perDay: range.days.map((day) => rowOf(day.label, perDay.get(day.key) ?? noUsage)),
          perAgent: byAgent.items.map((item) => rowOf(item.key ?? '', item)),
          perModel: byModel.items.map((item) => rowOf(item.key ?? '', item)),
          perUser: byUser.items.map((item) => rowOf(item.key ?? 'unknown user', item)),
          total: rowOf('total', byAgent.total),
        });
        setError(null);
      } catch (failure) {
        if (current()) setError(explainRequestError(failure));
      } finally {
        if (current()) setProgress(null);
      }
    },
    [client, admin, span],
  );
  usePoll(load, pollMs);

  return (
    <DeskPanel id="usage" title="Usage and cost" wide>
      {!admin ? (
        <p className="small muted">Usage and cost need the admin role.</p>
      ) : (
        <>
          <div className="desk-filters">
            <label>
              Period
              <select value={span} onChange={(event) => setSpan(Number(event.target.value))}>
                <option value={7}>Last 7 days</option>
                <option value={30}>Last 30 days</option>
              </select>
            </label>
            <label>
              Show
              <select value={metric} onChange={(event) => setMetric(event.target.value as Metric)}>
                <option value="tokens">Tokens</option>
                <option value="cost">Cost</option>
                <option value="calls">Model calls</option>
              </select>
            </label>
          </div>
          {progress ? (
            <p className="small muted desk-progress" aria-live="polite">
              <progress
                max={progress.of}
                value={progress.done}
                aria-label={`Loading usage: ${progress.done} of ${progress.of} reports`}
              />
              <span>
                Loading usage… {progress.done}/{progress.of}
              </span>
            </p>
          ) : null}
          {error ? (
            <p className="error" role="alert">
              {error}
            </p>
          ) : null}
          {data ? (
            <>
              <p className="small">
                Over the period: {formatTokens(data.total.input)} tokens in ·{' '}
                {formatTokens(data.total.output)} tokens out · {formatCost(data.total.cost)} ·{' '}
                {data.total.calls} model calls
              </p>
              <div className="desk-charts">
                <Chart title="Per day" rows={data.perDay} metric={metric} />
                <Chart title="Per agent" rows={data.perAgent} metric={metric} />
                <Chart title="Per model" rows={data.perModel} metric={metric} />
                <Chart title="Per user" rows={data.perUser} metric={metric} />
              </div>
              <p className="small muted">
                Days are UTC days. A call counts for the person whose message it answered.
              </p>
            </>
          ) : null}
        </>
      )}
    </DeskPanel>
  );
}

function Chart(props: { title: string; rows: Row[]; metric: Metric }) {
  const { rows, metric } = props;
  const empty = rows.every((row) => row.input + row.output + row.calls + row.cost === 0);
  const format = (value: number) =>
    metric === 'cost'
      ? formatCost(value)
      : metric === 'tokens'
        ? formatTokens(value)
        : String(value);
  return (
    <figure className="usage-chart" aria-label={`Usage ${props.title.toLowerCase()}`}>
      <figcaption className="small">{props.title}</figcaption>
      {rows.length === 0 || empty ? (
        <p className="small muted">Nothing used in this period.</p>
      ) : (
        <BarChart
          responsive
          style={{ width: '100%', height: 200 }}
          data={rows}
          margin={{ top: 8, right: 8, bottom: 0, left: 0 }}
          accessibilityLayer
        >
          <CartesianGrid strokeDasharray="3 3" vertical={false} stroke="var(--border)" />
          <XAxis dataKey="key" tick={{ fontSize: 11 }} interval="preserveStartEnd" />
          <YAxis tick={{ fontSize: 11 }} width={48} tickFormatter={format} />
          <Tooltip
            formatter={(value) => format(Number(value))}
            contentStyle={{
              background: 'var(--surface)',
              border: '1px solid var(--border)',
              borderRadius: 8,
              color: 'var(--text)',
            }}
            cursor={{ fill: 'var(--surface-2)' }}
          />
          {metric === 'tokens' ? (
            <>
              <Legend wrapperStyle={{ fontSize: 12 }} />
              <Bar
                dataKey="input"
                name="tokens in"
                stackId="tokens"
                fill="var(--accent)"
                isAnimationActive={false}
              />
              <Bar
                dataKey="output"
                name="tokens out"
                stackId="tokens"
                fill="var(--ok)"
                isAnimationActive={false}
              />
            </>
          ) : (
            <Bar
              dataKey={metric}
              name={metric === 'cost' ? 'cost (USD)' : 'model calls'}
              fill="var(--accent)"
              isAnimationActive={false}
            />
          )}
        </BarChart>
      )}
    </figure>
  );
}
