import type { AgentConfig } from '../config/types.js';
import { foldInputs } from '../providers/foldedPrompt.js';
import { attachmentMeta } from '../store/attachmentMeta.js';
import type { QueuedTurn } from '../store/collectTurns.js';
import { readAttachments } from '../store/readAttachments.js';
import { readSessionData } from '../store/readSessionData.js';
import type { AttemptContext } from '../store/readHistory.js';
import type { Lease } from '../store/types.js';
import { skillsPrompt } from '../tools/skills/catalog.js';
import type { RuntimeDeps } from './deps.js';
import type { ModelInfo } from './modelInfo.js';
import { userContext } from './userContext.js';
import {
  buildModelPrompt,
  fallbackContextWindow,
  type BuiltPrompt,
  type HistoryTurn,
  type PromptAttachment,
} from './prompt.js';

export const unknownModel: ModelInfo = { contextWindow: null, maxOutputTokens: null, vision: null };

/** The catalog's view of the agent's model (unknown models: nothing known). */
export function modelInfoOf(deps: RuntimeDeps, agent: AgentConfig): ModelInfo {
  return deps.modelInfo?.(agent.model.provider, agent.model.modelId) ?? unknownModel;
}

/**
 * How much history text to read for a prompt: about what the model's window holds (four
 * bytes a token), so the read is bounded however long the session grows; the prompt
 * builder then keeps exactly what fits.
 */
export function historyBytesFor(info: ModelInfo): number {
  return (info.contextWindow ?? fallbackContextWindow) * 4;
}

/**
 * The model's view before any step of the burst (prompt.ts): the agent's
 * instructions (then the burst's turns' own, and the skills it may load), as much history as fits the window — whole
 * turns, oldest dropped first —, then the burst's turns folded into one labelled user
 * message. Images go along only when the model can see them and the agent's `vision`
 * allows it; otherwise each is a short note. `tighter` halves the history (the retry after
 * a `context_length` refusal); `withoutImages` is the retry after a vision call failed.
 */
export async function basePrompt(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  context: Pick<AttemptContext, 'history' | 'preferences'>,
  turns: QueuedTurn[],
  options: { tighter?: boolean; withoutImages?: boolean } = {},
): Promise<BuiltPrompt> {
  const { history } = context;
  const info = modelInfoOf(deps, agent);
  // In a room with several people, the model must know who said what.
  const authors = new Set(
    [...history.filter((message) => message.role === 'user'), ...turns].map(
      (message) => message.author,
    ),
  );
  const label = (author: string, text: string) => (authors.size > 1 ? `${author}: ${text}` : text);

  const historyTurns: HistoryTurn[] = [];
  let current: HistoryTurn | null = null;
  let lastRole: string | null = null;
  for (const message of history) {
    if (message.role === 'user') {
      if (!current || lastRole === 'assistant') historyTurns.push((current = { entries: [] }));
      current.entries.push({
        kind: 'user',
        text: label(message.author, message.content),
        attachments: (message.attachments ?? []).map(placeholder),
      });
    } else {
      if (!current || lastRole === 'assistant') historyTurns.push((current = { entries: [] }));
      current.entries.push({ kind: 'assistant', text: message.content });
    }
    lastRole = message.role;
  }
  const burstAttachments = turns.flatMap((turn) => turn.attachments ?? []).map(placeholder);
  await describeAttachments(deps, lease, agent, info, options, historyTurns, burstAttachments);

  const skills =
    deps.skills && agent.skills.length > 0 ? skillsPrompt(deps.skills, agent.skills) : '';
  const snapshot = await stateSnapshot(deps, lease, agent);
  // A turn's own instructions (a client's, with its message) follow the agent's, each once.
  const own = [...new Set(turns.map((turn) => turn.instructions ?? '').filter((text) => text))];
  const people = userContext(
    context.preferences,
    turns.map((turn) => turn.author),
    new Date(),
  );
  return buildModelPrompt({
    instructions: [agent.instructions, ...own, skills, snapshot, people]
      .filter((part) => part !== '')
      .join('\n\n'),
    history: historyTurns,
    burst: {
      text: foldInputs(turns.map((turn) => ({ author: turn.author, content: turnText(turn) }))),
      attachments: burstAttachments,
    },
    model: info,
    agent: {
      vision: options.withoutImages ? 'never' : agent.vision,
      maxOutputTokens: agent.maxOutputTokens,
    },
    tighter: options.tighter ?? false,
  });
}

/**
 * The agent's `state.prompt` with `{{data}}` replaced by the JSON of the session's data as
 * the turn starts (committed, or `initial`): appended to the instructions, so every model
 * step of the burst reads it. Empty without a template.
 */
async function stateSnapshot(deps: RuntimeDeps, lease: Lease, agent: AgentConfig): Promise<string> {
  const template = agent.state?.prompt ?? null;
  if (agent.state === null || template === null) return '';
  const data =
    (await readSessionData(deps.db, lease.tenant, lease.sessionId)) ?? agent.state.initial;
  return template.replaceAll('{{data}}', JSON.stringify(data));
}

function placeholder(attachmentId: string): PromptAttachment {
  return { attachmentId, mediaType: 'image', bytes: 0, data: null };
}

/**
 * Fills in the attachments the prompt names: type and size for every one (the note a
 * model without vision reads), and the bytes of those the model will see — the burst's,
 * the previous turn's (`vision: auto`), or all (`always`).
 */
async function describeAttachments(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  info: ModelInfo,
  options: { withoutImages?: boolean },
  history: HistoryTurn[],
  burst: PromptAttachment[],
): Promise<void> {
  const inHistory = (turn: HistoryTurn) =>
    turn.entries.flatMap((entry) => (entry.kind === 'user' ? (entry.attachments ?? []) : []));
  const all = [...history.flatMap(inHistory), ...burst];
  if (all.length === 0) return;
  const meta = await attachmentMeta(
    deps.db,
    lease.tenant,
    lease.sessionId,
    all.map((attachment) => attachment.attachmentId),
  );
  for (const attachment of all) {
    const found = meta.get(attachment.attachmentId);
    if (found) Object.assign(attachment, { mediaType: found.media_type, bytes: found.bytes });
  }
  const canSee =
    !options.withoutImages &&
    agent.vision !== 'never' &&
    (info.vision === true || (info.vision === null && agent.vision === 'always'));
  if (!canSee) return;
  const shown = [
    ...burst,
    ...(agent.vision === 'always'
      ? history.flatMap(inHistory)
      : inHistory(history.at(-1) ?? { entries: [] })),
  ];
  const loaded = await readAttachments(
    deps.db,
    lease.tenant,
    lease.sessionId,
    shown.map((attachment) => attachment.attachmentId),
  );
  const bytes = new Map(loaded.map((row) => [row.attachment_id, row.data]));
  for (const attachment of shown) attachment.data = bytes.get(attachment.attachmentId) ?? null;
}

/** A pressed option is applied first: the model reads the choice, then any text. */
function turnText(turn: QueuedTurn): string {
  if (!turn.option) return turn.content;
  const choice = `Selected option: ${turn.option.value}`;
  return turn.content.trim() ? `${choice}\n${turn.content}` : choice;
}
