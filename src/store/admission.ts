import type { Visibility } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { newEvent, type NewEvent } from '../protocol/events.js';
import type { Queryable } from './db.js';
import type { ClaimedSession } from './claimSession.js';
import type { ClientTool } from './types.js';
import type { Viewer } from './visibility.js';

// What an admission is asked (admitTurn.ts) and what it answers, on both of its paths (the
// one statement of admitToSession.ts, the transaction of admitTurn.ts).

export interface AdmitTurnInput {
  tenant: string;
  /** Who posts: the owner of a session this admission creates. */
  author: string;
  /** The session must be one the poster may see (else it is as missing as a missing one). */
  viewer: Viewer;
  turnId: string;
  sessionId: string | null;
  /** The agent the request names, or null for the session's (or the default) agent. */
  agent: string | null;
  defaultAgent: string;
  /** Greeting of each known agent, for a session this admission creates. */
  greetings: ReadonlyMap<string, string | null>;
  /** Each agent's `visibility`, for a session this admission creates. */
  visibilities: ReadonlyMap<string, Visibility>;
  message: string;
  option: { request_id: string; value: string } | null;
  /** Images of this session (`attachments` rows) the turn carries, by id. */
  attachments: string[];
  /** Whether the poster triggers a turn of each agent (its roles against trigger_roles). */
  triggers: ReadonlyMap<string, boolean>;
  /** Each agent's `pending_input`: may a new message supersede a waiting request? */
  pendingInput: ReadonlyMap<string, 'supersede' | 'queue'>;
  /**
   * The agent revision the client expects (`agent_revision`): it must be the agent's
   * current one, is part of the fingerprint, and the turn runs with it.
   */
  agentRevision?: number | null;
  /**
   * Images the request carries inline (already checked: type, bytes, size), stored as
   * attachments of the turn's session in the admission's transaction and carried by the
   * turn after `attachments`. Their digests are part of the fingerprint; a replay stores
   * nothing again.
   */
  images?: { mediaType: string; data: Uint8Array }[];
  /**
   * Whether each of `images` also lands in its author's photo library: a chat platform's
   * photo, sent once; not the images of the OpenAI-compatible and AG-UI APIs, whose
   * clients send them again with every request.
   */
  imagesInLibrary?: boolean;
  /** Instructions for this turn, appended to the agent's (part of the fingerprint). */
  instructions?: string | null;
  /** The client's own string pairs, kept with the turn (part of the fingerprint). */
  metadata?: Record<string, string> | null;
  /** Tools the client declares, which it runs itself (checked; part of the fingerprint). */
  clientTools?: ClientTool[] | null;
  /**
   * Runs first in the admission's transaction, before the session is locked; throwing
   * admits nothing. A writer that may admit only while it holds a lease checks it here, so
   * that one whose lease was taken (it stalled, another ended the work) cannot admit late.
   */
  guard?: (tx: Queryable) => Promise<void>;
  /**
   * A lease to claim the session under, for a worker of the admitting process with a free
   * slot: when the turn is the session's only work and no one holds it, the admission
   * claims the session and starts the turn's attempt as the claim loop would
   * (`claim_session`), in its own statement, and returns the claimed session for that
   * worker to answer (`Admission.claimed`). Otherwise the admission is as without it.
   */
  claim?: {
    token: string;
    owner: string;
    ttlMs: number;
    parkAfterAttempts: number;
    /** The most turns of the first burst (a new message may join others queued before). */
    maxTurns: number;
    /**
     * The history window the claimed burst's prompt reads (`readHistory`'s limit and byte
     * bound): the one-statement admission reads it with the claim (`ClaimStart.context`).
     */
    history: { limit: number; bytes: number };
  };
}

/**
 * A slot of a worker in the admitting process, for the session an admission claims
 * (`AdmitTurnInput.claim`): the lease to claim it under, then `adopt` with the claimed
 * session or `release` when the admission did not claim it. The API and the worker meet
 * here in one process, through this interface only (the worker implements it).
 */
export interface SessionSlot {
  claim: NonNullable<AdmitTurnInput['claim']>;
  adopt(session: ClaimedSession): void;
  release(): void;
}

/** Where an admission finds a worker of its own process with a free slot. */
export interface SessionHandoff {
  /** A slot for a session of `tenant`, or null when the worker has none free. */
  reserveSession(tenant: string): SessionSlot | null;
}

export interface Admission {
  session_id: string;
  turn_id: string;
  sequence: number;
  /** `stored`: journaled and in the transcript, but no turn runs (no trigger role). */
  state: 'accepted' | 'stored';
  /** The session, claimed under `AdmitTurnInput.claim` with the turn's attempt started. */
  claimed?: ClaimedSession;
}

/** The `message` event of an admitted turn. */
export function messageEvent(
  input: AdmitTurnInput,
  messageId: string,
  attachments: string[] = [],
): NewEvent<'message'> {
  return newEvent('message', input.turnId, {
    message: {
      id: messageId,
      role: 'user',
      author: input.author,
      content: input.message,
      ...(input.option ? { option: input.option } : {}),
      ...(attachments.length > 0 ? { attachments } : {}),
    },
  });
}

/** A session of another agent than the request names. */
export function agentMismatch(agent: string | null): ParleyError {
  return new ParleyError('agent_mismatch', `this session belongs to agent "${agent}"`, { agent });
}
