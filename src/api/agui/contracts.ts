import { z } from 'zod';
import { clientKeyPattern } from '../../ids.js';
import { route } from '../contract.js';
import { storableJson, text } from '../validate.js';
import { clientToolLimits } from '../../tools/clientTools.js';

/** Where AG-UI clients point an `HttpAgent` (`url: "<parley>/ag-ui/<agent>"`). */
export const aguiBase = '/ag-ui';

const textContent = z.union([
  text(),
  z
    .array(z.object({ type: text(), text: text().optional() }).loose())
    .max(100)
    .meta({ description: 'content parts: the text parts are taken' }),
]);

/** The most bytes a run's `context` may bring (descriptions and values together). */
export const contextLimitBytes = 16 * 1024;

const contextEntry = z.object({ description: text(), value: text() }).loose();

const message = z
  .object({
    id: text().max(200).optional(),
    role: text().min(1).max(20),
    content: textContent.nullable().optional(),
  })
  .loose();

export const resumeEntry = z
  .object({
    interruptId: text().min(1).max(128),
    status: z.enum(['resolved', 'cancelled']),
    payload: z.unknown().refine(storableJson, 'must not contain NUL characters').optional(),
  })
  .loose();

export const runInput = z
  .object({
    threadId: text().min(1).max(200).meta({
      description:
        "a Parley session id, or the client's own thread id (its first run creates the thread's session)",
    }),
    runId: z.string().regex(clientKeyPattern).meta({
      description:
        "the turn's id (1-128 of A-Z a-z 0-9 _ -): a retry with the same id is the same run",
    }),
    messages: z.array(message).max(10_000).meta({
      description:
        "the conversation as the client holds it: its last message, the user's, is the turn's (the rest lives in the session)",
    }),
    resume: z.array(resumeEntry).max(64).optional().meta({
      description:
        'answers to the interrupts the previous run ended with: the waiting turn goes on in this run',
    }),
    state: z.unknown().optional().meta({
      description:
        "the state the client holds: an object that differs from the session's becomes the session's before the run's turn (the agent's state schema must accept it; journaled as state_changed by user); absent, null or {} is no opinion. Not taken with `resume`",
    }),
    tools: z
      .array(
        z
          .object({
            name: text().min(1).max(64),
            description: text().max(4000).optional(),
            parameters: z.record(z.string(), z.unknown()).refine(storableJson).optional(),
          })
          .loose(),
      )
      .max(clientToolLimits.count)
      .optional()
      .meta({
        description:
          "the front end's own tools: the model may call them; a run that calls one ends (RUN_FINISHED, its TOOL_CALL events out) and the next run brings the output as a `tool` message with its toolCallId, and the turn goes on",
      }),
    context: z
      .array(contextEntry)
      .max(100)
      .optional()
      .meta({
        description: `taken into this run's turn as instructions added to the agent's own, for that turn only (at most ${contextLimitBytes} bytes; not taken with \`resume\`, which goes on with a turn as admitted)`,
      }),
    forwardedProps: z.unknown().optional(),
  })
  .loose();

const sse = { description: 'AG-UI events, as text/event-stream' };

const binary = { type: 'string', format: 'binary' };

const sseOrProtobuf = {
  description:
    "AG-UI events as text/event-stream; as AG-UI's binary transport (each event a protobuf message after its length, 4 bytes big-endian) when Accept names application/vnd.ag-ui.event+proto at least as high as text/event-stream",
  content: {
    'text/event-stream': { schema: { type: 'string' } },
    'application/vnd.ag-ui.event+proto': { schema: binary },
  },
};

const include = {
  name: 'include',
  in: 'query',
  description:
    'a comma-separated list: `reasoning` shows the reasoning text (REASONING_MESSAGE_*); without it a run shows REASONING_START and REASONING_END only',
  schema: { type: 'string' },
};

export const aguiContracts = {
  run: route({
    method: 'POST',
    url: `${aguiBase}/:agent`,
    summary: 'AG-UI: run the agent (RunAgentInput in, AG-UI events out as SSE)',
    description:
      "Admits the last user message as a turn (runId = the turn id) of the thread's session, or, with `resume`, answers the interrupts the turn waits for; then streams the run: RUN_STARTED, REASONING_*, TEXT_MESSAGE_*, TOOL_CALL_*, STATE_SNAPSHOT then STATE_DELTA (JSON Patch), and RUN_FINISHED (outcome success, cancelled or interrupt) or RUN_ERROR.",
    parameters: [include],
    body: runInput,
    responses: { '201': sseOrProtobuf },
    errors: {
      '400':
        'invalid_request (context beyond its limit, include, a state the agent does not take), empty_message, message_too_long',
      '401': 'unauthorized',
      '403': 'forbidden (may not answer an interrupt)',
      '404': 'unknown_agent, session_not_found, input_not_found',
      '409':
        'agent_mismatch, turn_conflict, session_closed, stale_input, session_busy (a state while a turn is in flight)',
    },
  }),
  thread: route({
    method: 'GET',
    url: `${aguiBase}/:agent/threads/:threadId/events`,
    summary: "AG-UI: a thread's runs as AG-UI events, replayed after a cursor, then live",
    description:
      "Every run of the thread's session (the server's own too: missions, schedules, platform turns) as AG-UI events; the stream does not end at RUN_FINISHED. Without a cursor it starts with a run of its own holding MESSAGES_SNAPSHOT (the thread's messages so far) and the state, then follows from there (a run open then streams from its start). Each write's last event carries an SSE id; a reconnect with Last-Event-ID (or ?after=, 0 replays every run) continues exactly, re-opening a run that was open.",
    parameters: [
      { name: 'Last-Event-ID', in: 'header', schema: { type: 'string' } },
      { name: 'after', in: 'query', schema: { type: 'integer', minimum: 0 } },
      include,
    ],
    responses: { '200': sse },
    errors: {
      '400': 'invalid_cursor, invalid_request (include)',
      '401': 'unauthorized',
      '404': 'unknown_agent, session_not_found',
      '409': 'agent_mismatch',
      '429': 'too_many_streams',
    },
  }),
};
