import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Prometheus metrics of this process (GET /metrics). api and runtime both record here;
 * in a split deployment each process reports its own part.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'parley_' });

export const turnsAdmitted = new Counter({
  name: 'parley_turns_admitted_total',
  help: 'Admissions answered 202 (idempotent replays included).',
  registers: [registry],
});

export const turnOutcomes = new Counter({
  name: 'parley_turn_outcomes_total',
  help: 'Bursts finished by this worker, by outcome (done, error, parked, lease_lost).',
  labelNames: ['outcome'],
  registers: [registry],
});

export const stallsTotal = new Counter({
  name: 'parley_stalls_total',
  help: 'Turn steps the progress watchdog stopped, by what stalled (model_stream, tool, no_progress) and action (retry, end).',
  labelNames: ['what', 'action'],
  registers: [registry],
});
// Every series exists from the start (at 0), so a rate over it is defined before the first stall.
for (const what of ['model_stream', 'tool', 'no_progress']) {
  for (const action of ['retry', 'end']) stallsTotal.inc({ what, action }, 0);
}

export const sseConnections = new Gauge({
  name: 'parley_sse_connections',
  help: 'Open SSE event streams.',
  registers: [registry],
});

/** Open SSE responses, for the unflushed-bytes gauge. */
export const openStreams = new Set<{ writableLength: number }>();

export const sseUnflushedBytes = new Gauge({
  name: 'parley_sse_unflushed_bytes',
  help: 'Bytes written to SSE streams that their clients have not read yet (all streams).',
  registers: [registry],
  collect() {
    let total = 0;
    for (const stream of openStreams) total += stream.writableLength;
    this.set(total);
  },
});

export const httpRequests = new Counter({
  name: 'parley_http_requests_total',
  help: 'HTTP requests by route and status.',
  labelNames: ['route', 'status'],
  registers: [registry],
});

export const admissionSeconds = new Histogram({
  name: 'parley_admission_seconds',
  help: 'Time to make a user message durable.',
  buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
  registers: [registry],
});

export const tokensTotal = new Counter({
  name: 'parley_tokens_total',
  help: 'Provider tokens by tenant, agent, model and kind (input, output, cached_input, reasoning).',
  labelNames: ['tenant', 'agent', 'model', 'kind'],
  registers: [registry],
});

export const costUsdTotal = new Counter({
  name: 'parley_cost_usd_total',
  help: 'Provider cost in USD from the pricing table, by tenant, agent and model.',
  labelNames: ['tenant', 'agent', 'model'],
  registers: [registry],
});

/**
 * Counts one provider call's usage. The runtime calls it after the turn's commit applied
 * (so a rolled-back turn is not counted). `input` counts every input token, cached ones
 * included; `cached_input` and `reasoning` are subsets of `input` and `output`.
 */
export function countUsage(usage: {
  tenant: string;
  agent: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
  costUsd: number;
}): void {
  const labels = { tenant: usage.tenant, agent: usage.agent, model: usage.model };
  tokensTotal.inc({ ...labels, kind: 'input' }, usage.inputTokens);
  tokensTotal.inc({ ...labels, kind: 'output' }, usage.outputTokens);
  tokensTotal.inc({ ...labels, kind: 'cached_input' }, usage.cachedInputTokens);
  tokensTotal.inc({ ...labels, kind: 'reasoning' }, usage.reasoningTokens);
  costUsdTotal.inc(labels, usage.costUsd);
}

export const providerCircuitState = new Gauge({
  name: 'parley_provider_circuit_state',
  help: "A provider's circuit in this process: 0 closed, 1 open, 2 half-open (one probe).",
  labelNames: ['provider'],
  registers: [registry],
});

export const providerCircuitOpened = new Counter({
  name: 'parley_provider_circuit_opened_total',
  help: 'Times a provider circuit opened in this process (consecutive failures, or a failed probe).',
  labelNames: ['provider'],
  registers: [registry],
});

export const budgetReserved = new Gauge({
  name: 'parley_budget_reserved',
  help: "Worst cases of model calls in flight held against spending budgets, by tenant and metric (cost_usd, tokens); read from the database when scraped, so every API process reports the deployment's figure.",
  labelNames: ['tenant', 'metric'],
  registers: [registry],
});

export const budgetBreaches = new Counter({
  name: 'parley_budget_breaches_total',
  help: 'Model calls a spending budget refused before they started, by tenant, scope, metric and period.',
  labelNames: ['tenant', 'scope', 'metric', 'period'],
  registers: [registry],
});
