import {
  ROOT_CONTEXT,
  SpanKind,
  type Context,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  RandomIdGenerator,
  type IdGenerator,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { Config, TelemetryConfig } from '../config/types.js';
import type { Logger } from '../log.js';
import { inputMessages, outputMessages, systemInstructions } from './content.js';
import { turnTraceId } from './traceId.js';
import type {
  AdmissionTrace,
  ChatReply,
  ChatTrace,
  Telemetry,
  ToolTrace,
  TurnTrace,
} from './tracing.js';

/**
 * Telemetry as OpenTelemetry GenAI spans (semantic conventions 1.38, docs/deployment.md,
 * "OpenTelemetry"), batched and exported over OTLP/HTTP, protobuf or JSON. The provider is
 * this process's own, never registered globally: parents are passed explicitly.
 *
 *   parley.turn                an admission (API process); a root of its turn's trace
 *   invoke_agent {agent}       one turn run; a root of its turn's trace (traceId.ts)
 *   ├─ chat {model}            one model call (each retry its own; the gate's: purpose gate)
 *   └─ execute_tool {tool}     one tool call
 *   chat {model}               a loop iteration's evaluation or a model's approval
 *                              decision (parley.purpose), a root in its iteration turn's trace
 */
export function startTelemetry(
  config: Pick<Config, 'telemetry' | 'providers'>,
  host: { env: Record<string, string | undefined>; log: Logger; instance: string },
): Telemetry {
  const settings = config.telemetry;
  if (settings.tracesUrl === null) throw new Error('telemetry: no otlp_endpoint');
  const headers: Record<string, string> = {};
  for (const [header, variable] of Object.entries(settings.headersFromEnv)) {
    headers[header] = host.env[variable] ?? '';
  }
  const exporterConfig = { url: settings.tracesUrl, headers };
  const exporter = reportingFailures(
    settings.protocol === 'http/json'
      ? new JsonExporter(exporterConfig)
      : new ProtobufExporter(exporterConfig),
    host.log,
  );
  const ids = new TurnIds();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': settings.serviceName,
      'service.instance.id': host.instance,
    }),
    idGenerator: ids,
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('parley');
  const providerKind = (name: string) =>
    Object.hasOwn(config.providers, name) ? config.providers[name]?.kind : undefined;
  return {
    admission: (turn) => admissionTrace(tracer, ids, turn),
    turn: (run) => new OtelTurn(tracer, ids, settings, providerKind, run),
    structuredCall: (call) => {
      ids.next = turnTraceId(call.tenant, call.turnId);
      const traced = chatSpan(tracer, false, providerKind(call.provider), call, ROOT_CONTEXT, true);
      ids.next = null;
      return traced;
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

/**
 * Span ids are random; a turn run's trace id is derived from its turn (traceId.ts). The
 * tracer asks for a trace id synchronously inside `startSpan`, for a root span only, so
 * the id set just before that call is the one it takes.
 */
class TurnIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  next: string | null = null;

  generateTraceId(): string {
    const id = this.next ?? this.random.generateTraceId();
    this.next = null;
    return id;
  }

  generateSpanId(): string {
    return this.random.generateSpanId();
  }
}

class OtelTurn implements TurnTrace {
  private span: Span | null = null;
  private failedWith: string | null = null;

  constructor(
    private readonly tracer: Tracer,
    private readonly ids: TurnIds,
    private readonly settings: TelemetryConfig,
    private readonly providerKind: (name: string) => string | undefined,
    private readonly run: { tenant: string; sessionId: string; agent: string },
  ) {}

  begin(attempt: { turnId: string; turnIds: string[]; attempt: number }): void {
    if (this.span) return;
    this.ids.next = turnTraceId(this.run.tenant, attempt.turnId);
    this.span = this.tracer.startSpan(
      `invoke_agent ${this.run.agent}`,
      {
        kind: SpanKind.INTERNAL,
        root: true,
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': this.run.agent,
          'gen_ai.conversation.id': this.run.sessionId,
          'parley.tenant': this.run.tenant,
          'parley.turn_id': attempt.turnId,
          'parley.turn_ids': attempt.turnIds,
          'parley.attempt': attempt.attempt,
        },
      },
      ROOT_CONTEXT,
    );
    this.ids.next = null;
  }

  failed(code: string): void {
    this.failedWith = code;
  }

  chat(call: Parameters<TurnTrace['chat']>[0]): ChatTrace {
    if (!this.span) return noChat;
    return chatSpan(
      this.tracer,
      this.settings.captureContent,
      this.providerKind(call.provider),
      { ...call, sessionId: this.run.sessionId },
      trace.setSpan(ROOT_CONTEXT, this.span),
    );
  }

  tool(call: Parameters<TurnTrace['tool']>[0]): ToolTrace {
    if (!this.span) return noTool;
    const span = this.tracer.startSpan(
      `execute_tool ${call.tool}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': call.tool,
          'gen_ai.tool.call.id': call.callId,
          'gen_ai.tool.type': 'function',
          'gen_ai.conversation.id': this.run.sessionId,
          ...(this.settings.captureContent
            ? { 'gen_ai.tool.call.arguments': JSON.stringify(call.arguments ?? null) }
            : {}),
        },
      },
      trace.setSpan(ROOT_CONTEXT, this.span),
    );
    const capture = this.settings.captureContent;
    return {
      end: (outcome) => {
        if (!outcome.ok) return failSpan(span, outcome.error.code);
        if (capture) span.setAttribute('gen_ai.tool.call.result', JSON.stringify(outcome.result));
        span.end();
      },
    };
  }

  end(outcome: { kind: string; errorType?: string }): void {
    const span = this.span;
    if (!span) return;
    span.setAttribute('parley.outcome', outcome.kind);
    const errorType = outcome.errorType ?? this.failedWith;
    if (errorType) failSpan(span, errorType);
    else span.end();
  }
}

function admissionTrace(
  tracer: Tracer,
  ids: TurnIds,
  turn: { tenant: string; turnId: string },
): AdmissionTrace {
  ids.next = turnTraceId(turn.tenant, turn.turnId);
  const span = tracer.startSpan(
    'parley.turn',
    {
      kind: SpanKind.INTERNAL,
      root: true,
      attributes: { 'parley.tenant': turn.tenant, 'parley.turn_id': turn.turnId },
    },
    ROOT_CONTEXT,
  );
  ids.next = null;
  return {
    end: (admitted) => {
      span.setAttributes({
        'gen_ai.conversation.id': admitted.sessionId,
        'parley.admission': admitted.state,
      });
      span.end();
    },
    fail: (errorType) => failSpan(span, errorType),
  };
}

/**
 * One `chat` span: a step's model call under its run's span, or a structured call (the
 * gate, an evaluation, an approval decision) with its `parley.purpose`.
 */
function chatSpan(
  tracer: Tracer,
  capture: boolean,
  kind: string | undefined,
  call: {
    provider: string;
    model: string;
    sessionId: string;
    prompt?: Parameters<TurnTrace['chat']>[0]['prompt'];
    purpose?: string;
  },
  parent: Context,
  root = false,
): ChatTrace {
  const attributes: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': semconvProvider(kind) ?? call.provider,
    'gen_ai.request.model': call.model,
    'gen_ai.conversation.id': call.sessionId,
    'parley.provider': call.provider,
    ...(call.purpose ? { 'parley.purpose': call.purpose } : {}),
  };
  if (capture && call.prompt) {
    const system = systemInstructions(call.prompt);
    if (system !== null) attributes['gen_ai.system_instructions'] = system;
    attributes['gen_ai.input.messages'] = inputMessages(call.prompt);
  }
  const span = tracer.startSpan(
    `chat ${call.model}`,
    { kind: SpanKind.CLIENT, attributes, root },
    parent,
  );
  return {
    end: (reply: ChatReply) => {
      const finishReason = semconvFinishReason(reply.finishReason);
      span.setAttributes({
        'gen_ai.usage.input_tokens': reply.inputTokens,
        'gen_ai.usage.output_tokens': reply.outputTokens,
        'gen_ai.usage.cache_read.input_tokens': reply.cachedInputTokens,
        'gen_ai.usage.reasoning.output_tokens': reply.reasoningTokens,
        'gen_ai.response.finish_reasons': [finishReason],
        'parley.cost_usd': reply.costUsd,
        ...(reply.responseModel === null ? {} : { 'gen_ai.response.model': reply.responseModel }),
        ...(reply.responseId === null ? {} : { 'gen_ai.response.id': reply.responseId }),
        ...(capture && call.prompt
          ? { 'gen_ai.output.messages': outputMessages(reply, finishReason) }
          : {}),
      });
      span.end();
    },
    fail: (errorType: string) => failSpan(span, errorType),
  };
}

const noChat: ChatTrace = { end: () => {}, fail: () => {} };
const noTool: ToolTrace = { end: () => {} };

/** Errors as the conventions record them: status ERROR and `error.type`, no message text. */
function failSpan(span: Span, errorType: string): void {
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** `gen_ai.provider.name` for the kinds the conventions name; others keep Parley's name. */
function semconvProvider(kind: string | undefined): string | undefined {
  switch (kind) {
    case 'openai':
      return 'openai';
    case 'anthropic':
      return 'anthropic';
    case 'google':
      return 'gcp.gemini';
    case undefined:
      return undefined;
    default:
      return kind;
  }
}

/** The AI SDK's unified finish reasons in the conventions' spelling. */
function semconvFinishReason(reason: string): string {
  switch (reason) {
    case 'tool-calls':
      return 'tool_call';
    case 'content-filter':
      return 'content_filter';
    default:
      return reason;
  }
}

/** The batch processor drops failed exports silently; this says so in the process's log. */
function reportingFailures(exporter: SpanExporter, log: Logger): SpanExporter {
  return {
    export: (spans, done) =>
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) {
          log.warn(
            { spans: spans.length, err: result.error?.message ?? 'unknown' },
            'telemetry: span export failed',
          );
        }
        done(result);
      }),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}
