/**
 * Resource shapes of PROTOCOL.md §1, §2, §4 and §5, as the server sends them.
 */

export type SessionState = 'idle' | 'queued' | 'running' | 'input_required' | 'parked' | 'closed';

export interface PendingInput {
  request_id: string;
  kind: string;
  expected_sequence: number;
  [field: string]: unknown;
}

/** The session projection: `latest_sequence` is the resync cursor. */
/** Who of a tenant sees a session (admins see every one). */
export type Visibility = 'private' | 'tenant' | 'room';

export interface SessionProjection {
  session_id: string;
  agent: string;
  title: string | null;
  /** Who created it; null for sessions made before sessions had owners. */
  owner?: string | null;
  /** private: its owner and its agent's approvers; tenant: everyone; room: owner and members. */
  visibility?: Visibility;
  /** Users who see a `room` besides its owner. */
  members?: string[];
  state: SessionState;
  latest_sequence: number;
  earliest_sequence: number;
  current_turn: { turn_id: string; state: string } | null;
  pending_input: PendingInput | null;
  queued_turns?: number;
  usage: { input_tokens: number; output_tokens: number; cost_usd: number };
  created_at: string;
  updated_at: string;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** A durable transcript message (GET …/messages), newest first. */
export interface TranscriptMessage {
  id: string;
  role: 'user' | 'assistant' | 'system';
  author: string;
  content: string;
  turn_id: string | null;
  sequence: number;
  created_at: string;
  /** A reply's cost: the provider calls of the turn it answers. */
  usage?: { input_tokens: number; output_tokens: number; cost_usd: number };
}

/** The 202 answer of POST /api/v1/chat/turns. `stored`: kept, but no turn runs. */
export interface Admission {
  session_id: string;
  turn_id: string;
  sequence: number;
  state: 'accepted' | 'stored';
}

export interface InputAnswer {
  state: string;
  sequence: number;
}

export interface CancelResult {
  result: 'cancelled' | 'duplicate' | 'too_late';
  state: string;
  sequence: number;
}

export type { InboxItem } from '../protocol/inbox.js';

/** An agent as GET /api/v1/agents describes it (an extension; never its instructions). */
export interface AgentInfo {
  name: string;
  /** The agent a turn without `agent` gets. */
  default: boolean;
  greeting: string | null;
  tools: { name: string; policy: 'allow' | 'approve' | 'deny' }[];
  /** Null: any participant may answer its input requests. */
  approver_roles: string[] | null;
  /** Whether the caller may answer its input requests. */
  may_answer: boolean;
  accepts_images: boolean;
}

/** The caller's principal (GET /api/v1/me, an extension). */
export interface Me {
  tenant: string;
  user: string;
  roles: string[];
  /** The deployment operator's key (or dev mode): may sync the catalog, prune, read metrics. */
  operator: boolean;
  /** `dev`: no API keys are configured. */
  mode: 'dev' | 'keys';
}
