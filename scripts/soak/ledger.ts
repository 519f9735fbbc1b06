/**
 * What the clients were told, recorded as they are told it: the checker holds the
 * database to these promises. A turn acknowledged with 202 must be in the journal and end
 * exactly once; a cancel answered `cancelled` must end its turn as cancelled; an answer
 * acknowledged with 200 must be the one journaled.
 */

/**
 * What a client meant a turn to exercise; the checker knows what to expect of each. A
 * `follow_up` is the plain message a `supersede` round sends while its approval waits.
 */
export type TurnKind =
  | 'plain'
  | 'burst'
  | 'approval'
  | 'supersede'
  | 'follow_up'
  | 'clock'
  | 'cancel'
  | 'transient'
  | 'effects'
  | 'budget'
  /** A call of a tool the client declared and runs itself (`client_tools`): it answers. */
  | 'client_tool'
  /** The agent asks the person (`ask_user`): the client answers, declines or walks away. */
  | 'question'
  /** A turn of the `steps` agent that runs out of its step budget (`on_exhausted: finish`). */
  | 'steps'
  /** A turn of the `stateful` agent whose model changes the session's state (`update_state`). */
  | 'state'
  /**
   * A message carrying an image (mediaClient.ts). The demo model (not a vision one) reads
   * a note of the image after the message, so the reply is the echo and then that note:
   * checker/media.ts holds it to begin with the echo, `checkReplies` leaves it alone.
   */
  | 'media';

export interface AcknowledgedTurn {
  turnId: string;
  sessionId: string;
  kind: TurnKind;
  message: string;
  /**
   * The 202's `sequence`: where the user's message sits in the session's journal; null
   * where the protocol's answer names none (an OpenAI response).
   */
  sequence: number | null;
  /** 202 answers received for this turn_id (retries and deliberate double sends). */
  acknowledgements: number;
}

export interface CancelRecord {
  sessionId: string;
  turnId: string;
  commandId: string;
  result: 'cancelled' | 'duplicate' | 'too_late';
  state: string;
}

export interface AnswerRecord {
  sessionId: string;
  requestId: string;
  approved: boolean;
  /** A client tool's answer: the output the client sent (its call's result must be it). */
  output?: string;
  /** A question's answer: the text the person sent (its call's result must carry it). */
  answer?: string;
}

/**
 * One upload of the media client, by its label (its `Idempotency-Key` and its turn_id):
 * where it went, the attachment every answer named, and what came of it.
 */
export interface MediaRecord {
  label: string;
  sessionId: string;
  /** The first answer's `attachment_id`; every later answer must name the same. */
  attachmentId: string;
  /** Answers (200 or 201) received for this key: retries and deliberate repeats. */
  answers: number;
  /** The reply read aloud (200 `audio/wav` twice, byte for byte): its message id. */
  spokenMessageId: string | null;
  /** The turn that generated an image in the same session, once it ended `done`. */
  imageTurnId?: string;
}

/**
 * A session followed through the AG-UI thread stream (aguiThread.ts): the events it kept,
 * in order (a re-opened run's repeated starts left out, `timestamp` dropped), up to the
 * last write it received whole, whose SSE id is `lastId`.
 */
export interface ThreadRecord {
  sessionId: string;
  events: (Record<string, unknown> & { type: string })[];
  lastId: number;
}

/** A state an AG-UI run carried (`RunAgentInput.state`), its run acknowledged with 200. */
export interface StateRecord {
  sessionId: string;
  /** The run's turn: the change is journaled with it, before its message. */
  turnId: string;
  data: Record<string, unknown>;
}

/** An A2A task sent with a push config, acknowledged by its first stream event. */
export interface PushRecord {
  label: string;
  taskId: string;
  /** The config's token: what each of its notifications carries. */
  token: string;
  /** The reply its `completed` notification must carry: the demo model's echo. */
  reply: string;
}

/** Something a client saw that the protocol rules out, told as it happened. */
export interface ClientViolation {
  check: string;
  detail: string;
}

export class Ledger {
  readonly turns = new Map<string, AcknowledgedTurn>();
  readonly cancels: CancelRecord[] = [];
  /** Answers acknowledged with 200. */
  readonly answers: AnswerRecord[] = [];
  readonly violations: ClientViolation[] = [];
  /** The media client's uploads, by label. */
  readonly media = new Map<string, MediaRecord>();
  /** Sessions also followed through the AG-UI thread stream. */
  readonly threads: ThreadRecord[] = [];
  /** States AG-UI runs carried, acknowledged with 200. */
  readonly states: StateRecord[] = [];
  /** A2A tasks sent with a push config. */
  readonly pushes: PushRecord[] = [];
  readonly counters = {
    admissionAttempts: 0,
    /** Admissions retried after a connection error, a 5xx or a timeout. */
    admissionRetries: 0,
    /** Admissions sent twice on purpose (to the other API), as a double-clicking user would. */
    doubleSends: 0,
    /** Turns given up on without any 202 (may or may not be in the journal). */
    unacknowledged: 0,
    approvalsRequested: 0,
    /** Approvals the client walked away from: their deadline ends them. */
    approvalsLeft: 0,
    approved: 0,
    rejected: 0,
    /** Calls of a client's own tool its client was asked to run. */
    clientToolCalls: 0,
    /** Of those, the calls the client left unanswered: their deadline ends them. */
    clientToolsLeft: 0,
    /** Questions (`ask_user`) the agent asked a client. */
    questionsAsked: 0,
    /** Of those, the questions the client answered (200) and declined (200). */
    questionsAnswered: 0,
    questionsDeclined: 0,
    /** Of those, the questions the client left unanswered: `question_timeout_ms` ends them. */
    questionsLeft: 0,
    /** Answers refused with 409 stale_input (superseded, or a retry of a landed answer). */
    staleAnswers: 0,
    cancelsSent: 0,
    streamReconnects: 0,
    /** Rounds a client stopped following before its turns ended (the drain decides). */
    followTimeouts: 0,
    unparks: 0,
    /** Answers, cancels and unparks given up after a minute of retries. */
    httpErrors: 0,
    /** Streamed Responses created through the OpenAI-compatible API. */
    openaiResponses: 0,
    /** Their streams resumed with `starting_after` after a broken connection. */
    openaiResumes: 0,
    /** Streamed A2A messages (`SendStreamingMessage`). */
    a2aTasks: 0,
    /** Their tasks followed again with `SubscribeToTask` after a broken connection. */
    a2aResubscribes: 0,
    /** Of the A2A tasks, those sent with a push config (`taskPushNotificationConfig`). */
    a2aPushTasks: 0,
    /** Chat Completions sent (stateless one-turn requests, half of them streamed). */
    chatCompletions: 0,
    /** Sent again with the same Idempotency-Key (no answer, 5xx, 504, a broken stream). */
    chatRetries: 0,
    /** AG-UI runs (`POST /ag-ui/default`, each on a thread of its own). */
    aguiRuns: 0,
    /** Sent again with the same runId (no answer, 5xx, a stream broken before its end). */
    aguiRetries: 0,
    /** Approval interrupts answered (200) by a run's `resume`. */
    aguiResumes: 0,
    /** Runs that carried a state (`RunAgentInput.state`), acknowledged with 200. */
    aguiStates: 0,
    /** Runs refused `409 session_busy` (a turn still in flight), sent again. */
    aguiBusy: 0,
    /** Sessions also followed through the AG-UI thread stream. */
    aguiThreads: 0,
    /** Its connections after the first (Last-Event-ID), after a break or silence. */
    aguiThreadReconnects: 0,
    /** Calls of an agent's tool through the MCP server. */
    mcpCalls: 0,
    /** Calls made again (same idempotency key, a new MCP session) after a failure or `in_progress`. */
    mcpRetries: 0,
    /** Images uploaded by the media client (one per label, however often sent). */
    mediaUploads: 0,
    /** Uploads sent again (same `Idempotency-Key`) after no answer, a 5xx or a timeout. */
    mediaUploadRetries: 0,
    /** Uploads sent again on purpose after their answer, as a double-clicking user would. */
    mediaUploadRepeats: 0,
    /** Replies read aloud: requests answered 200 (each reply is asked twice). */
    speechRequests: 0,
    /** Speech requests sent again after no answer, a 5xx or a timeout. */
    speechRetries: 0,
    /** Media rounds given up on (no session, upload, 202, end or speech in time). */
    mediaGivenUp: 0,
    /** Turns that generated an image (`generate_image`) and ended `done`. */
    imagesGenerated: 0,
  };

  violation(check: string, detail: string): void {
    this.violations.push({ check, detail });
  }

  /**
   * Records an upload's answer. Every answer for one key must name the same attachment
   * (the `Idempotency-Key` promise): another id is a second attachment stored.
   */
  uploaded(label: string, sessionId: string, attachmentId: string): void {
    const known = this.media.get(label);
    if (!known) {
      this.media.set(label, { label, sessionId, attachmentId, answers: 1, spokenMessageId: null });
      return;
    }
    known.answers += 1;
    if (known.attachmentId !== attachmentId) {
      this.violation(
        'attachment duplicate',
        `upload ${label}: answered attachment ${attachmentId}, the first answer was ${known.attachmentId}`,
      );
    }
  }

  /**
   * Records a 202. Every answer for one turn_id must be the same: same session, same
   * sequence (the protocol's idempotency promise, across API processes and restarts).
   */
  acknowledge(turn: Omit<AcknowledgedTurn, 'acknowledgements'>): void {
    const known = this.turns.get(turn.turnId);
    if (!known) {
      this.turns.set(turn.turnId, { ...turn, acknowledgements: 1 });
      return;
    }
    known.acknowledgements += 1;
    if (known.sessionId !== turn.sessionId || known.sequence !== turn.sequence) {
      this.violation(
        'idempotency',
        `turn ${turn.turnId}: a retry was answered session ${turn.sessionId} sequence ${turn.sequence}, the first answer was session ${known.sessionId} sequence ${known.sequence}`,
      );
    }
  }
}
