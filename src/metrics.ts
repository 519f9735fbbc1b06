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
