import { z } from 'zod';
import { isPictureUrl, maxPictureUrlChars, pictureUrlRule } from '../media/pictureUrl.js';
import {
  callTimeoutMs,
  durationMs,
  maxBudgetIterations,
  maxBudgetToolCalls,
  maxOutputTokensCeiling,
  modelName,
  policy,
} from './schemaUnits.js';

/** An agent's definition and its tools' entries, as the file and a tenant's definition write them (schema.ts). */

/** Whom an escalation re-routes a request to: a person or everyone with a role. */
const escalationTarget = z
  .string()
  .regex(/^(user|role):[^\s:][^\s]{0,127}$/, 'must be user:NAME or role:NAME');

/**
 * An approval's escalation chain: each step re-routes the request, still pending, this
 * long after it was made; steps come in order of `after_ms`.
 */
const escalationChain = z
  .array(z.object({ after_ms: durationMs, to: escalationTarget }).strict())
  .max(8)
  .refine(
    (steps) => steps.every((step, i) => i === 0 || step.after_ms > (steps[i - 1]?.after_ms ?? 0)),
    'steps must come in increasing after_ms',
  );

/**
 * A tool's entry under an agent: a policy, or a table with a policy (optional: each tool
 * has a default) and options. `timeout_ms`, `idempotent`, `human_only`,
 * `approval_timeout_ms`, `on_timeout`, `escalate`, `remind_before_ms` and `on_unknown` apply to every tool; a tool's own keys (http_fetch's `allow_hosts`…) are checked by that tool when the
 * file compiles.
 */
export const toolEntrySchema = z.union([
  policy,
  z
    .object({
      policy: policy.optional(),
      timeout_ms: callTimeoutMs.optional(),
      idempotent: z.boolean().optional(),
      // Only a person may answer its approvals, never an agent (missions' agent:NAME).
      human_only: z.boolean().optional(),
      // How long its approvals wait for an answer (overrides the agent's), and what applies
      // when nobody answers in time: reject (the safe default), or approve (operator only).
      approval_timeout_ms: durationMs.optional(),
      on_timeout: z.enum(['reject', 'approve']).optional(),
      // Who else its approvals go to, and when (overrides the agent's chain), and the
      // reminder before the deadline.
      escalate: escalationChain.optional(),
      remind_before_ms: durationMs.optional(),
      // A non-idempotent call found started without a result after a crash: recorded as
      // interrupted, or a person is asked whether it took effect (reconciliation).
      on_unknown: z.enum(['interrupted', 'ask']).optional(),
    })
    .catchall(z.unknown()),
]);

/** Agents and missions are grouped by namespace (listing filter); names stay unique. */
export const namespaceName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'letters, digits, _ . - (at most 64)');

/** What pressing one option does to a session's state, answered without a model call. */
const optionEffectSchema = z
  .object({
    set: z.record(z.string(), z.unknown()).nullable().default(null),
    result: z.unknown().optional(),
    complete: z.boolean().default(false),
    reply: z.string().min(1),
  })
  .strict();

const agentStateSchema = z
  .object({
    schema: z.record(z.string(), z.unknown()),
    initial: z.record(z.string(), z.unknown()),
    prompt: z.string().min(1).nullable().default(null),
    options: z.record(z.string(), optionEffectSchema).default({}),
  })
  .strict();

export const agentSchema = z
  .object({
    namespace: namespaceName.default('default'),
    model: modelName.default('demo/echo'),
    instructions: z.string().default('You are a helpful assistant.'),
    greeting: z.string().nullable().default(null),
    trigger_roles: z.array(z.string()).nullable().default(null),
    approver_roles: z.array(z.string()).nullable().default(null),
    // How long an approval waits for an answer before its safe default applies (null: for
    // ever). A tool's entry may override it.
    approval_timeout_ms: durationMs.nullable().default(null),
    // Who else a pending approval goes to, and when; a reminder this long before its
    // deadline. A tool's entry may override either.
    escalate: escalationChain.default([]),
    remind_before_ms: durationMs.nullable().default(null),
    // How long an `ask_user` question waits for an answer (null: for ever); past it the
    // model is told that nobody answered in time.
    question_timeout_ms: durationMs.nullable().default(null),
    tools: z.record(z.string(), toolEntrySchema).default({}),
    skills: z.array(z.string().min(1)).default([]),
    budgets: z
      .object({
        max_iterations: z.number().int().positive().max(maxBudgetIterations).default(8),
        max_tool_calls: z.number().int().nonnegative().max(maxBudgetToolCalls).default(16),
        on_exhausted: z.enum(['ask', 'finish']).default('ask'),
        // How long a `budget_extension` request waits (null: for ever); past it, the
        // extension counts as refused.
        extension_timeout_ms: durationMs.nullable().default(null),
      })
      .strict()
      .default({
        max_iterations: 8,
        max_tool_calls: 16,
        on_exhausted: 'ask',
        extension_timeout_ms: null,
      }),
    pending_input: z.enum(['supersede', 'queue']).default('supersede'),
    gate: z
      .object({
        model: modelName,
        topic: z.string().min(1),
        redirect: z.string().min(1).default("I can only help with this service's topic."),
        timeout_ms: callTimeoutMs.default(10_000),
      })
      .strict()
      .nullable()
      .default(null),
    completion_text: z.string().nullable().default(null),
    // Where model steps go while the model's provider circuit is open.
    fallback_model: modelName.nullable().default(null),
    // What completion_text replaces: the reply's closing sentence, or the whole reply.
    completion_replaces: z.enum(['closing_sentence', 'reply']).default('closing_sentence'),
    temperature: z.number().min(0).max(2).nullable().default(null),
    max_output_tokens: z
      .number()
      .int()
      .positive()
      .max(maxOutputTokensCeiling)
      .nullable()
      .default(null),
    // Passed to the AI SDK as `providerOptions` unchanged, keyed by the SDK's provider key
    // (openai, anthropic, google, or the provider's name for openai_compatible / ollama).
    provider_options: z.record(z.string(), z.record(z.string(), z.unknown())).default({}),
    vision: z.enum(['auto', 'always', 'never']).default('auto'),
    // Who of the tenant sees a new session of this agent (docs/PROTOCOL.md, "Owner and
    // visibility"); a session's creator may ask for another.
    visibility: z.enum(['private', 'tenant', 'room']).default('tenant'),
    // The session's domain state (docs/governance.md, "Sessions with state"): null, none.
    state: agentStateSchema.nullable().default(null),
    // The voice its messages are read aloud in (a voice id of the catalog, `voices:`);
    // absent: `speech.default_voice`.
    voice: z.string().min(1).max(200).nullable().optional(),
    // Its picture where people see it (the agents listing, the web app): an https URL or a
    // small inline image (a data: URL; the web app makes one of a photo of the library).
    icon: z
      .string()
      .max(maxPictureUrlChars)
      .refine(isPictureUrl, pictureUrlRule)
      .nullable()
      .optional(),
  })
  .strict();
