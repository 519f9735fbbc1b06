import { HttpTransport, type HttpOptions } from './http.js';
import { AccountCalls } from './accountCalls.js';
import { sessionPath } from './mediaCalls.js';
import { newClientKey } from './ids.js';
import { Subscription, type SubscribeOptions } from './subscription.js';
import { UserStream, type UserStreamOptions } from './userStream.js';
import type {
  Admission,
  AgentInfo,
  BudgetInfo,
  CancelResult,
  DefinitionRevision,
  DefinitionRevisionView,
  InboxItem,
  InputAnswer,
  Page,
  PanelView,
  SessionProjection,
  TranscriptMessage,
  Visibility,
} from './types.js';

export type ParleyClientOptions = HttpOptions;

export interface AdmitTurnOptions {
  /** Omit to create a new session (with the agent's greeting first). */
  sessionId?: string | undefined;
  message: string;
  agent?: string | undefined;
  /** Picks one of the options an assistant message offered. */
  option?: { request_id: string; value: string } | undefined;
  /** The idempotency key; made here (once) when omitted. */
  turnId?: string | undefined;
  /** The agent revision expected (`revision` of the agent listing): the turn runs with it. */
  agentRevision?: number | undefined;
  /** Images the turn carries: ids of attachments of its session (`uploadAttachment`). */
  attachments?: string[] | undefined;
  /** Tools the client runs itself (PROTOCOL.md §2 `client_tools`; answered per §4). */
  clientTools?: ClientToolDeclaration[] | undefined;
  signal?: AbortSignal | undefined;
}

/** A tool the client declares with a turn and runs itself. */
export interface ClientToolDeclaration {
  name: string;
  description?: string;
  /** The JSON schema (type `object`) of its arguments. */
  parameters?: Record<string, unknown>;
}

export interface AnswerInputOptions {
  /** The sequence of the `input_required` event being answered. */
  expectedSequence: number;
  approved: boolean;
  /** E.g. `{reason}` for an approval, the answer for a question. */
  response?: Record<string, unknown> | undefined;
  /**
   * The approval's `arguments_digest` as shown (`input_required`, the inbox): the answer
   * then applies only to exactly those arguments. Required for `human_only` tools.
   */
  argumentsDigest?: string | undefined;
  /**
   * An `external_auth` approval: the reference of the credential granted (`vault:...`, a
   * variable name the operator configured), never the secret itself.
   */
  credentialRef?: string | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * The Parley client SDK (PROTOCOL.md §1-§5, behaving as §7 asks). Runs in browsers and
 * Node alike: fetch, TextDecoder, AbortController, setTimeout and crypto only.
 */
export class ParleyClient extends AccountCalls {
  readonly http: HttpTransport;

  constructor(options: ParleyClientOptions) {
    super();
    this.http = new HttpTransport(options);
  }

  /**
   * §1. Not retried: a retry after a lost answer would make a second session. Without a
   * `visibility`, the agent's applies; `members` are who sees a `room`.
   */
  createSession(
    options: {
      agent?: string;
      title?: string;
      visibility?: Visibility;
      members?: string[];
      /** A workspace the caller is a member of, to group it in. */
      workspaceId?: string;
      signal?: AbortSignal;
    } = {},
  ): Promise<SessionProjection> {
    const body: Record<string, unknown> = {};
    if (options.agent !== undefined) body.agent = options.agent;
    if (options.title !== undefined) body.title = options.title;
    if (options.visibility !== undefined) body.visibility = options.visibility;
    if (options.members !== undefined) body.members = options.members;
    if (options.workspaceId !== undefined) body.workspace_id = options.workspaceId;
    return this.http.request('POST', '/api/v1/chat/sessions', {
      body,
      idempotent: false,
      signal: options.signal,
    });
  }

  /**
   * §1: newest activity first; pass `next_cursor` back as `cursor` for the next page.
   * `workspaceId`: only the sessions of that workspace.
   */
  listSessions(
    options: {
      limit?: number;
      cursor?: string | null;
      workspaceId?: string;
      signal?: AbortSignal;
    } = {},
  ): Promise<Page<SessionProjection>> {
    return this.http.request('GET', '/api/v1/chat/sessions', {
      query: { limit: options.limit, cursor: options.cursor, workspace_id: options.workspaceId },
      signal: options.signal,
    });
  }

  getSession(
    sessionId: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<SessionProjection> {
    return this.http.request('GET', sessionPath(sessionId), { signal: options.signal });
  }

  /**
   * Changes who sees a session (its owner or an admin): its visibility, its room's members
   * (the list is replaced); or its workspace (null: none). Idempotent: the same change
   * twice is the same state.
   */
  updateSession(
    sessionId: string,
    change: {
      visibility?: Visibility;
      members?: string[];
      workspaceId?: string | null;
      signal?: AbortSignal;
    },
  ): Promise<SessionProjection> {
    const body: Record<string, unknown> = {};
    if (change.visibility !== undefined) body.visibility = change.visibility;
    if (change.members !== undefined) body.members = change.members;
    if (change.workspaceId !== undefined) body.workspace_id = change.workspaceId;
    return this.http.request('PATCH', sessionPath(sessionId), {
      body,
      idempotent: true,
      signal: change.signal,
    });
  }

  /**
   * Deletes a session and its text everywhere (its owner or an admin). Not retried: a retry
   * after a lost answer reads 404 `session_not_found`, which then means it is gone.
   */
  deleteSession(sessionId: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    return this.http.request('DELETE', sessionPath(sessionId), {
      idempotent: false,
      signal: options.signal,
    });
  }

  /** §1: the durable transcript, newest first; `next_cursor` points further back. */
  listMessages(
    sessionId: string,
    options: { before?: string | null; limit?: number; signal?: AbortSignal } = {},
  ): Promise<Page<TranscriptMessage>> {
    return this.http.request('GET', `${sessionPath(sessionId)}/messages`, {
      query: { before: options.before, limit: options.limit },
      signal: options.signal,
    });
  }

  /**
   * §2: admits a turn. The turn_id is made once, before the first try, and every retry
   * sends the same body: the server then answers the same 202 and stores the turn once.
   */
  admitTurn(options: AdmitTurnOptions): Promise<Admission> {
    const body: Record<string, unknown> = {
      turn_id: options.turnId ?? newClientKey('turn'),
      message: options.message,
    };
    if (options.sessionId !== undefined) body.session_id = options.sessionId;
    if (options.agent !== undefined) body.agent = options.agent;
    if (options.option !== undefined) body.option = options.option;
    if (options.agentRevision !== undefined) body.agent_revision = options.agentRevision;
    if (options.attachments !== undefined && options.attachments.length > 0) {
      body.attachments = options.attachments;
    }
    if (options.clientTools?.length) body.client_tools = options.clientTools;
    return this.http.request('POST', '/api/v1/chat/turns', {
      body,
      idempotent: true,
      signal: options.signal,
    });
  }

  /** §3: a durable subscription with reconnect, resync and dedupe (see Subscription). */
  subscribe(sessionId: string, options: SubscribeOptions): Subscription {
    const path = `${sessionPath(sessionId)}/events`;
    return new Subscription(
      {
        open: (after, signal) =>
          this.http.stream(
            path,
            { accept: 'text/event-stream', 'last-event-id': String(after) },
            signal,
          ),
        getSession: (signal) => this.getSession(sessionId, { signal }),
      },
      options,
    );
  }

  /**
   * §4: answers an `input_required`. Not retried: the answer is single-use, so a retry
   * after a lost answer would read 409 stale_input; on a network error, read the
   * projection's `pending_input` to learn whether the answer landed.
   */
  answerInput(
    sessionId: string,
    requestId: string,
    options: AnswerInputOptions,
  ): Promise<InputAnswer> {
    const body: Record<string, unknown> = {
      expected_sequence: options.expectedSequence,
      approved: options.approved,
    };
    if (options.response !== undefined) body.response = options.response;
    if (options.argumentsDigest !== undefined) body.arguments_digest = options.argumentsDigest;
    if (options.credentialRef !== undefined) body.credential_ref = options.credentialRef;
    return this.http.request(
      'POST',
      `${sessionPath(sessionId)}/inputs/${encodeURIComponent(requestId)}`,
      { body, idempotent: false, signal: options.signal },
    );
  }

  /**
   * Extension: the approvals inbox, every pending input request of the tenant that this
   * principal may answer, oldest first.
   */
  listInputs(
    options: { limit?: number; cursor?: string | null; signal?: AbortSignal } = {},
  ): Promise<Page<InboxItem>> {
    return this.http.request('GET', '/api/v1/inputs', {
      query: { state: 'pending', limit: options.limit, cursor: options.cursor },
      signal: options.signal,
    });
  }

  /** Extension: the agents a session can be created with. */
  listAgents(options: { signal?: AbortSignal } = {}): Promise<{ items: AgentInfo[] }> {
    return this.http.request('GET', '/api/v1/agents', { signal: options.signal });
  }

  /**
   * Extension (admins): the revisions an agent's definition has had in the caller's
   * tenant, newest first (shipped, edited, restored); `next_cursor` points further back.
   */
  listAgentRevisions(
    name: string,
    options: { limit?: number; cursor?: string | null; signal?: AbortSignal } = {},
  ): Promise<Page<DefinitionRevision>> {
    return this.http.request('GET', `${agentPath(name)}/revisions`, {
      query: { limit: options.limit, cursor: options.cursor ?? undefined },
      signal: options.signal,
    });
  }

  /** Extension (admins): one revision of an agent's definition, whole. */
  getAgentRevision(
    name: string,
    revision: number,
    options: { signal?: AbortSignal } = {},
  ): Promise<DefinitionRevisionView> {
    return this.http.request('GET', `${agentPath(name)}/revisions/${revision}`, {
      signal: options.signal,
    });
  }

  /**
   * Extension (admins): the agent's shipped definition, what a DELETE of the tenant's own
   * restores (404 `not_shipped` for an agent the tenant created).
   */
  getShippedAgent(
    name: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<DefinitionRevisionView> {
    return this.http.request('GET', `${agentPath(name)}/shipped`, { signal: options.signal });
  }

  /**
   * Extension: the tenant's spending budgets, with what each used and holds reserved
   * (admins only: 403 otherwise).
   */
  listBudgets(options: { signal?: AbortSignal } = {}): Promise<{ items: BudgetInfo[] }> {
    return this.http.request('GET', '/api/v1/budgets', { signal: options.signal });
  }

  /**
   * Extension: the caller's user stream (`GET /api/v1/me/events`): what its screens show,
   * across sessions, live; reconnects by itself and resumes with `Last-Event-ID`.
   */
  subscribeUser(options: UserStreamOptions): UserStream {
    return new UserStream(
      (lastEventId, signal) =>
        this.http.stream(
          '/api/v1/me/events',
          {
            accept: 'text/event-stream',
            ...(lastEventId === null ? {} : { 'last-event-id': lastEventId }),
          },
          signal,
        ),
      options,
    );
  }

  /**
   * Extension: panels, newest first — a session's (`sessionId`), a workspace's
   * (`workspaceId`), else the caller's own (`scope`).
   */
  listPanels(
    options: {
      sessionId?: string;
      workspaceId?: string;
      scope?: 'session' | 'workspace';
      limit?: number;
      cursor?: string;
      signal?: AbortSignal;
    } = {},
  ): Promise<Page<PanelView>> {
    return this.http.request('GET', '/api/v1/panels', {
      query: {
        session_id: options.sessionId,
        workspace_id: options.workspaceId,
        scope: options.scope,
        limit: options.limit,
        cursor: options.cursor,
      },
      signal: options.signal,
    });
  }

  /**
   * Extension: submits a form of a panel; the values reach the panel's conversation as a
   * turn (202 once durable). Idempotent by `turnId`, made once and kept across retries.
   */
  submitPanelForm(
    panelId: string,
    submission: { form: string; values: Record<string, string | number | boolean | null> },
    options: { turnId?: string; signal?: AbortSignal } = {},
  ): Promise<Admission> {
    return this.http.request('POST', `/api/v1/panels/${encodeURIComponent(panelId)}/submit`, {
      body: { turn_id: options.turnId ?? newClientKey('form'), ...submission },
      idempotent: true,
      signal: options.signal,
    });
  }

  /** §5: cancels accepted work; idempotent by command_id, made once and kept across retries. */
  cancelTurn(
    sessionId: string,
    turnId: string,
    options: { commandId?: string; signal?: AbortSignal } = {},
  ): Promise<CancelResult> {
    return this.http.request(
      'POST',
      `${sessionPath(sessionId)}/turns/${encodeURIComponent(turnId)}/cancel`,
      {
        body: { command_id: options.commandId ?? newClientKey('cancel') },
        idempotent: true,
        signal: options.signal,
      },
    );
  }
}

function agentPath(name: string): string {
  return `/api/v1/agents/${encodeURIComponent(name)}`;
}
