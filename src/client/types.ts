/**
 * Resource shapes of PROTOCOL.md §1, §2, §4 and §5, as the server sends them.
 */

// The REST resources are declared once, as the server's zod schemas (src/protocol):
// only their types are imported here, so the browser bundle carries no zod.
export type {
  Admission,
  AgentInfo,
  BudgetInfo,
  CancelResult,
  InputAnswer,
  Me,
  Page,
  PendingInput,
  PhotoInfo,
  Preferences,
  SessionProjection,
  SessionState,
  TranscriptMessage,
  Visibility,
  VoiceInfo,
  WorkspaceInfo,
} from '../protocol/rest.js';

/** What a recording says (POST /api/v1/transcriptions). */
export interface Transcription {
  text: string;
  /** ISO 639-1, when the model said. */
  language: string | null;
  duration_seconds: number | null;
  model: string;
}

/** An image stored for a session (POST /api/v1/chat/sessions/{id}/attachments). */
export interface Attachment {
  attachment_id: string;
  media_type: string;
  bytes: number;
}
export type {
  Checkpoint,
  Execution,
  ExecutionCommandAnswer,
  Mission,
  RewindAnswer,
  Schedule,
} from '../protocol/missions.js';
export type {
  DefinitionRevision,
  DefinitionRevisionView,
  RevisionSource,
} from '../protocol/definitions.js';
export type { InboxItem } from '../protocol/inbox.js';
export type { PanelComponent, PanelForm, PanelView } from '../protocol/panels.js';
