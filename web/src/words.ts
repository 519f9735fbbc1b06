/** Plain words for what the protocol says in codes. */
import type { SessionState } from 'parley/client';

export const stateLabels: Record<SessionState, string> = {
  idle: 'idle',
  queued: 'queued',
  running: 'running',
  input_required: 'waiting for input',
  parked: 'parked',
  closed: 'closed',
};

/** Why a turn failed for good (error event codes), for a person. */
export function explainError(code: string | undefined, fallback: string | undefined): string {
  switch (code) {
    case 'session_parked':
      return 'This conversation is paused: the agent failed several times in a row without making progress. Nothing more runs until an operator resumes it (parley sessions unpark).';
    case 'provider_rejected':
      return 'The model refused this request, so the reply stopped here. Sending it again will not help; rephrase it or ask an operator.';
    case 'provider_auth':
      return 'The model refused this request: the server’s credentials for it are not accepted. An operator must fix the provider key.';
    case 'context_length':
      return 'This conversation has grown too long for the model, even with its oldest part left out. Start a new conversation.';
    case 'provider_unavailable':
      return 'The model could not be reached, even after several tries. Send your message again in a moment.';
    case 'provider_timeout':
      return 'The model stopped answering mid-reply, even after several tries. Send your message again in a moment.';
    case 'stalled':
      return 'The reply stopped making progress, even after another try, so it was ended. Send your message again; if it keeps happening, tell an operator.';
    case 'unknown_agent':
      return "This conversation's agent no longer exists on this server.";
    case 'session_closed':
      return 'This conversation was completed before this message was answered.';
    case 'invalid_state':
      return 'The choice could not be applied: it would leave the conversation in a state its agent does not allow.';
    case 'budget_exhausted':
      return 'A spending budget would have been exceeded by the next model call, and no more was granted. A tenant admin can raise the budget; then send your message again.';
    default:
      return fallback ? `The reply failed: ${fallback}` : 'The reply failed.';
  }
}

/** Errors of a request the person made (send, answer, press, cancel). */
export function explainRequestError(error: unknown): string {
  const code = (error as { code?: string } | null)?.code;
  const message = (error as { message?: string } | null)?.message;
  switch (code) {
    case 'network_error':
    case 'timeout':
      return 'The server cannot be reached right now.';
    case 'unauthorized':
      return 'Your API key is no longer accepted. Sign in again.';
    case 'forbidden':
      return 'Your roles may not do this.';
    case 'stale_input':
      return 'Someone already answered this request.';
    case 'option_locked':
      return 'Someone already chose an option here.';
    case 'session_closed':
      return 'This conversation is completed: it takes no more messages.';
    case 'message_too_long':
      return 'This message is too long for the server.';
    default:
      return message ?? 'Something went wrong.';
  }
}

export function formatCost(usd: number): string {
  if (usd === 0) return '$0';
  if (usd < 0.01) return `$${usd.toFixed(5)}`;
  return `$${usd.toFixed(2)}`;
}

/** How long until a deadline, in words ("4 min left"; "due now" once passed). */
export function timeLeft(iso: string, now = Date.now()): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  if (seconds <= 0) return 'due now';
  if (seconds < 90) return `${seconds} s left`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 90) return `${minutes} min left`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h left`;
  return `${Math.round(hours / 24)} days left`;
}

/** The user's language and time zone (preferences): dates are shown in them. */
let display: { locale: string | undefined; timeZone: string | undefined } = {
  locale: undefined,
  timeZone: undefined,
};

export function setDisplay(language: string | null, timezone: string | null): void {
  display = { locale: language ?? undefined, timeZone: timezone ?? undefined };
}

/** A date and time in the user's language and time zone (the browser's where none is saved). */
export function formatDateTime(iso: string): string {
  try {
    return new Date(iso).toLocaleString(display.locale, { timeZone: display.timeZone });
  } catch {
    return new Date(iso).toLocaleString();
  }
}

function formatDate(iso: string): string {
  try {
    return new Date(iso).toLocaleDateString(display.locale, { timeZone: display.timeZone });
  } catch {
    return new Date(iso).toLocaleDateString();
  }
}

export function timeAgo(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 45) return 'just now';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  return formatDate(iso);
}

/** An execution's `status` (docs/missions.md), for a person. */
export const executionStatusLabels: Record<string, string> = {
  starting: 'starting',
  running: 'running',
  interrupted: 'waiting for a person',
  waiting: 'waiting for its next run',
  blocked: 'blocked',
  success: 'succeeded',
  error: 'failed',
  timeout: 'timed out',
  cancelled: 'cancelled',
  limit_reached: 'reached its iteration limit',
  cancelling: 'cancelling',
};

/** A number of tokens, short ("12.3k"). */
export function formatTokens(tokens: number): string {
  if (tokens < 1000) return String(Math.round(tokens));
  if (tokens < 1_000_000) return `${(tokens / 1000).toFixed(tokens < 10_000 ? 1 : 0)}k`;
  return `${(tokens / 1_000_000).toFixed(1)}M`;
}
