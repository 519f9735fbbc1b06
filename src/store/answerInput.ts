import { ParleyError } from '../errors.js';
import type { Db } from './db.js';
import { newEvent, type Actor } from '../protocol/events.js';
import { journalEvents } from './appendEvents.js';
import { saveCredential } from './saveCredential.js';

export interface AnswerInput {
  tenant: string;
  sessionId: string;
  requestId: string;
  expectedSequence: number;
  approved: boolean;
  response: Record<string, unknown> | null;
  actor: Actor;
  /**
   * The `arguments_digest` the answerer saw: an approval whose arguments have another
   * digest is not the one they decided on (409 stale_input).
   */
  argumentsDigest?: string;
  /**
   * An approval of a `human_only` tool needs `argumentsDigest` (400 invalid_request
   * without): the HTTP API's rule, where a client shows the arguments it approves.
   */
  digestRequiredForHumanOnly?: boolean;
  /**
   * Journal `response` in `input_resolved` too: an agent's decision and its reason are the
   * audit trail of what it approved (a person's response stays in input_requests only).
   */
  journalResponse?: boolean;
  /**
   * An `external_auth` approval's credential reference: stored for the request's user and
   * provider (table `credentials`), never journaled. Required to approve one, refused on
   * any other answer (400 invalid_request).
   */
  credentialRef?: string;
  /**
   * Whether this principal may answer requests of this session's agent — and, in an
   * execution's session, of that execution (where its interruptions are routed).
   */
  mayAnswer: (
    agent: string,
    execution: { interrupt_to: string | null; user_name: string } | null,
    request: { kind: string; call_id: string; escalated_to: string[]; user_name: string | null },
  ) => boolean;
}

/**
 * PROTOCOL.md §4, in the order it prescribes: unknown request or another tenant's session
 * → 404; a principal who may not answer → 403; an approval of a `human_only` tool answered
 * without `arguments_digest` where one is required → 400 `invalid_request`; a stale
 * `expected_sequence`, a request no longer pending (answered, expired, timed out) or an
 * `arguments_digest` other than the request's → 409 `stale_input` (answers are
 * single-use). The answer is journaled as
 * `input_resolved` with the authenticated actor. When nothing else of the session waits
 * for a person, the session becomes claimable and the turn resumes on a worker.
 */
export async function answerInput(
  db: Db,
  input: AnswerInput,
): Promise<{ state: 'accepted'; sequence: number }> {
  return db.transaction(async (tx) => {
    const session = (
      await tx.query<{ agent: string; last_sequence: number }>(
        'select agent, last_sequence from sessions where tenant = $1 and session_id = $2 for update',
        [input.tenant, input.sessionId],
      )
    ).rows[0];
    const request = session
      ? (
          await tx.query<{
            state: string;
            expected_sequence: number;
            turn_id: string;
            declined_by: string | null;
            arguments_digest: string | null;
            human_only: boolean;
            kind: string;
            call_id: string;
            escalated_to: string[];
            provider: string | null;
            user_name: string | null;
          }>(
            `select state, expected_sequence, turn_id, declined_by, arguments_digest, human_only,
                    kind, call_id, escalated_to, provider, user_name
               from input_requests
              where tenant = $1 and session_id = $2 and request_id = $3`,
            [input.tenant, input.sessionId, input.requestId],
          )
        ).rows[0]
      : undefined;
    if (!session || !request) throw new ParleyError('input_not_found', 'no such input request');
    const routed =
      (
        await tx.query<{ interrupt_to: string | null; user_name: string }>(
          'select interrupt_to, user_name from executions where session_id = $1',
          [input.sessionId],
        )
      ).rows[0] ?? null;
    // A request its agent declined goes to people as if the execution had no route.
    const execution =
      routed && request.declined_by !== null && routed.interrupt_to?.startsWith('agent:')
        ? { ...routed, interrupt_to: null }
        : routed;
    if (!input.mayAnswer(session.agent, execution, request)) {
      throw new ParleyError('forbidden', 'your roles may not answer this request');
    }
    if (
      input.digestRequiredForHumanOnly === true &&
      request.human_only &&
      input.argumentsDigest === undefined
    ) {
      throw new ParleyError(
        'invalid_request',
        'arguments_digest: required to answer an approval of a human_only tool (the arguments_digest of its input_required event)',
      );
    }
    const credential = request.kind === 'external_auth' && input.approved;
    if (credential && input.credentialRef === undefined) {
      throw new ParleyError(
        'invalid_request',
        'credential_ref: required to approve an external_auth request (the reference of the credential granted)',
      );
    }
    if (!credential && input.credentialRef !== undefined) {
      throw new ParleyError(
        'invalid_request',
        'credential_ref: only an approval of an external_auth request names a credential',
      );
    }
    if (request.state !== 'pending' || request.expected_sequence !== input.expectedSequence) {
      throw new ParleyError('stale_input', 'this request is no longer pending at that sequence', {
        request_state: request.state,
      });
    }
    if (input.argumentsDigest !== undefined && input.argumentsDigest !== request.arguments_digest) {
      throw new ParleyError(
        'stale_input',
        'arguments_digest: not the digest of the arguments this request shows',
        { request_state: request.state },
      );
    }
    await tx.query(
      `update input_requests
          set state = 'answered', approved = $2, response = $3, actor = $4, answered_at = now()
        where request_id = $1`,
      [
        input.requestId,
        input.approved,
        JSON.stringify(input.response),
        JSON.stringify(input.actor),
      ],
    );
    if (credential && input.credentialRef !== undefined) {
      await saveCredential(tx, {
        tenant: input.tenant,
        user: request.user_name ?? input.actor.user,
        provider: request.provider ?? '',
        reference: input.credentialRef,
      });
    }
    const others = await tx.query(
      `select 1 from input_requests where session_id = $1 and state = 'pending' limit 1`,
      [input.sessionId],
    );
    // The last answer a waiting turn needed makes it claimable again; while a worker still
    // holds the session (it is about to wait), waitForInput sees the answer and requeues.
    if (others.rowCount === 0) {
      await tx.query(
        `update sessions set state = 'queued' where session_id = $1 and state = 'input_required'`,
        [input.sessionId],
      );
    }
    const sequence = await journalEvents(
      tx,
      input.sessionId,
      [
        newEvent('input_resolved', request.turn_id, {
          request_id: input.requestId,
          approved: input.approved,
          actor: input.actor,
          state: 'answered',
          ...(input.journalResponse && input.response ? { response: input.response } : {}),
          ...(credential ? { credential_provided: true } : {}),
        }),
      ],
      others.rowCount === 0 ? 'input' : 'events',
    );
    return { state: 'accepted', sequence };
  });
}
