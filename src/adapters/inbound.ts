import { agentFor, type AgentLookup } from '../agents/lookup.js';
import { triggersTurns } from '../agents/triggers.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ActionEvent, Chat, Message, Thread } from 'chat';
import type { PlatformConfig } from '../config/platformTypes.js';
import { type AgentConfig, type Config, type Principal } from '../config/types.js';
import { isParleyError, ParleyError } from '../errors.js';
import type { Logger } from '../log.js';
import { isSpendingRequest } from '../protocol/inbox.js';
import { withDeadline } from '../time/abortable.js';
import { admitTurn } from '../store/admitTurn.js';
import { answerInput } from '../store/answerInput.js';
import { bindThread } from '../store/bindThread.js';
import type { Db } from '../store/db.js';
import { findReply } from '../store/findReply.js';
import { legacyTurnAdmitted } from '../store/legacyTurnAdmitted.js';
import { pendingQuestion } from '../store/pendingQuestion.js';
import { trustedViewer } from '../store/visibility.js';
import {
  actionIds,
  digestDigitsInButton,
  type ApprovalCard,
  type ReplyText,
} from './delivery/content.js';
import { hasRole, isAddressed } from '../config/principals.js';
import { clientKey, mayAnswer, platformTurnId, principalFor } from './identity.js';
import type { PlatformClient } from './platforms/types.js';
import { platformImages } from './inboundImages.js';
import { platformText, storable } from './text.js';

export interface InboundDeps {
  db: Db;
  config: Config;
  clients: ReadonlyMap<string, PlatformClient>;
  log: Logger;
  /** Agents as each tenant sees them (edits included); default: the configuration's. */
  agents?: AgentLookup;
}

/**
 * Failures of one inbound request's handlers. The SDK catches and logs a handler's error
 * on some paths; the route reads them here, so an event Parley could not store is
 * answered 500 and the platform retries it.
 */
export const inboundFailures = new AsyncLocalStorage<unknown[]>();

/**
 * What a platform event does in Parley. A message in a direct conversation, a mention, or
 * any message in a thread Parley follows (the SDK's subscriptions) is admitted as a turn
 * of the thread's session, the platform's message id being its `turn_id` (a dotted id no
 * API client can write): a platform's retry is the same turn. The thread's session is its
 * first author's, with the agent's visibility. Authors without a trigger role are stored
 * as context. A reply
 * while the agent waits for an answer to a question is that answer. Pressed buttons
 * answer approvals (PROTOCOL.md §4, the presser as actor) or choose options.
 */
export function registerInbound(chat: Chat, deps: InboundDeps): void {
  const guarded =
    <A extends unknown[]>(work: (...args: A) => Promise<void>) =>
    async (...args: A) => {
      try {
        await work(...args);
      } catch (error) {
        if (isParleyError(error)) {
          // Retrying would not change the answer: recorded, not failed.
          deps.log.warn({ code: error.code }, 'platform event refused');
          return;
        }
        inboundFailures.getStore()?.push(error);
        throw error;
      }
    };
  chat.onDirectMessage(guarded((thread, message) => onMessage(deps, thread, message)));
  chat.onNewMention(
    guarded(async (thread, message) => {
      // Subscribed first: if the admission fails, the platform's retry still finds the
      // thread followed.
      await thread.subscribe();
      await onMessage(deps, thread, message);
    }),
  );
  chat.onSubscribedMessage(guarded((thread, message) => onMessage(deps, thread, message)));
  chat.onAction(
    [actionIds.approve, actionIds.reject, actionIds.option],
    guarded((event) => onAction(deps, event)),
  );
}

interface Resolved {
  client: PlatformClient;
  platform: PlatformConfig;
  agent: AgentConfig;
}

function resolve(deps: InboundDeps, adapterName: string): Resolved {
  const client = deps.clients.get(adapterName);
  const agent = client ? agentFor(deps, client.config.tenant, client.config.agent) : undefined;
  if (!client || !agent) throw new ParleyError('not_found', 'no such adapter');
  return { client, platform: client.config, agent };
}

async function onMessage(deps: InboundDeps, thread: Thread, message: Message): Promise<void> {
  if (message.author.isMe || message.author.isBot === true) return;
  const { client, platform, agent } = resolve(deps, thread.adapter.name);
  const said = platformText(
    message.isMention ? withoutMention(message.text, client) : message.text,
    deps.config.server.maxMessageBytes,
  );
  const { images, notes } = await platformImages(message, deps.config.limits.attachmentBytes);
  const text = platformText(
    [said, ...notes].filter((line) => line.trim() !== '').join('\n'),
    deps.config.server.maxMessageBytes,
  );
  if (text.trim() === '' && images.length === 0) return;
  const principal = principalFor(platform, message.author.userId);
  const sessionId = await bindThread(deps.db, {
    tenant: platform.tenant,
    adapter: client.name,
    threadId: storable(thread.id),
    agent: agent.name,
    greeting: agent.greeting,
    owner: principal.user,
    visibility: agent.visibility,
    context: messageContext(message),
  });
  if (await answeredQuestion(deps, platform, agent, principal, sessionId, text)) return;
  const parts = [client.name, thread.channelId.replace(/^[^:]+:/, ''), message.id];
  // A platform's redelivery of a message admitted before turn ids had their own namespace.
  const legacy = { turnId: clientKey(parts), sessionId, author: principal.user, message: text };
  if (await legacyTurnAdmitted(deps.db, { tenant: platform.tenant, ...legacy })) return;
  await admitTurn(deps.db, {
    tenant: platform.tenant,
    author: principal.user,
    viewer: trustedViewer,
    turnId: platformTurnId(parts),
    sessionId,
    agent: null,
    defaultAgent: agent.name,
    attachments: [],
    images,
    imagesInLibrary: true,
    greetings: new Map([[agent.name, agent.greeting]]),
    visibilities: new Map([[agent.name, agent.visibility]]),
    message: text,
    option: null,
    triggers: new Map([[agent.name, triggersOf(deps, agent, principal)]]),
    pendingInput: new Map([[agent.name, agent.pendingInput]]),
  });
}

function triggersOf(deps: InboundDeps, agent: AgentConfig, principal: Principal): boolean {
  return triggersTurns(agent, principal, deps.config.tenancy.wildcardTriggers);
}

/**
 * "@parley summarise this" is addressed to the agent, not about it: a leading mention of
 * the bot (by name or id, as the platform renders it) is left out of the turn's text.
 */
export function withoutMention(text: string, client: PlatformClient): string {
  const names = [client.adapter.userName, client.adapter.botUserId]
    .filter((name): name is string => typeof name === 'string' && name !== '')
    .map((name) => name.toLowerCase());
  const match = /^\s*<?@([^\s>]+)>?[\s,:]*/.exec(text);
  return match && names.includes((match[1] as string).toLowerCase())
    ? text.slice(match[0].length)
    : text;
}

/** The recipient of a streamed reply (Slack): who wrote, in which workspace. */
function messageContext(message: Message): Record<string, string> {
  const raw = (message.raw ?? {}) as { team?: unknown; team_id?: unknown };
  const team = typeof raw.team === 'string' ? raw.team : raw.team_id;
  return {
    user_id: storable(message.author.userId),
    ...(typeof team === 'string' ? { team_id: storable(team) } : {}),
  };
}

async function answeredQuestion(
  deps: InboundDeps,
  platform: PlatformConfig,
  agent: AgentConfig,
  principal: Principal,
  sessionId: string,
  text: string,
): Promise<boolean> {
  if (!mayAnswer(agent, principal)) return false;
  const question = await pendingQuestion(deps.db, platform.tenant, sessionId);
  if (!question) return false;
  try {
    await answerInput(deps.db, {
      tenant: platform.tenant,
      sessionId,
      requestId: question.request_id,
      expectedSequence: question.expected_sequence,
      approved: true,
      response: { answer: text },
      actor: { user: principal.user, tenant: platform.tenant },
      mayAnswer: () => true,
    });
    return true;
  } catch (error) {
    // Answered or expired meanwhile: the message is an ordinary one after all.
    if (isParleyError(error) && error.code === 'stale_input') return false;
    throw error;
  }
}

async function onAction(deps: InboundDeps, event: ActionEvent): Promise<void> {
  const { client, platform, agent } = resolve(deps, event.adapter.name);
  const principal = principalFor(platform, event.user.userId);
  const notify = (text: string) => {
    withDeadline(client.config.timeoutMs, (signal) =>
      client.notify(event.threadId, event.user.userId, text, signal),
    ).catch((error: unknown) => {
      deps.log.warn({ adapter: client.name, err: (error as Error).message }, 'notice failed');
    });
  };
  const [replyId = '', choice] = (event.value ?? '').split('.');
  const reply = await findReply(deps.db, platform.tenant, client.name, replyId);
  const sameChannel =
    reply !== null &&
    client.adapter.channelIdFromThreadId(reply.thread_id) ===
      client.adapter.channelIdFromThreadId(event.threadId);
  if (!reply || !sameChannel) {
    notify('This button no longer applies.');
    return;
  }
  if (event.actionId === actionIds.option) {
    const offered = (reply.content as unknown as ReplyText).options;
    const value = offered?.choices[Number(choice)];
    if (!offered || value === undefined) {
      notify('This button no longer applies.');
      return;
    }
    try {
      await admitTurn(deps.db, {
        tenant: platform.tenant,
        author: principal.user,
        viewer: trustedViewer,
        turnId: platformTurnId([client.name, 'option', reply.reply_id, event.user.userId]),
        sessionId: reply.session_id,
        agent: null,
        defaultAgent: agent.name,
        attachments: [],
        greetings: new Map([[agent.name, agent.greeting]]),
        visibilities: new Map([[agent.name, agent.visibility]]),
        message: '',
        option: { request_id: offered.request_id, value },
        triggers: new Map([[agent.name, triggersOf(deps, agent, principal)]]),
        pendingInput: new Map([[agent.name, agent.pendingInput]]),
      });
    } catch (error) {
      if (!isParleyError(error)) throw error;
      notify('An option was already chosen here.');
    }
    return;
  }
  const card = reply.content as unknown as ApprovalCard;
  // A card that shows a digest sends it with the press: a press of another card version
  // (other arguments) is refused, and the card's digest is checked as a web answer's is.
  if (
    card.arguments_digest !== undefined &&
    choice !== card.arguments_digest.slice(0, digestDigitsInButton)
  ) {
    notify('This card no longer shows the arguments of the request; nothing was answered.');
    return;
  }
  try {
    await answerInput(deps.db, {
      tenant: platform.tenant,
      sessionId: reply.session_id,
      requestId: card.request_id,
      expectedSequence: card.expected_sequence,
      approved: event.actionId === actionIds.approve,
      response: null,
      ...(card.arguments_digest === undefined ? {} : { argumentsDigest: card.arguments_digest }),
      actor: { user: principal.user, tenant: platform.tenant },
      // A spending budget's request goes to whoever may raise the budget (an admin).
      mayAnswer: (_agent, _execution, request) =>
        isSpendingRequest(request)
          ? hasRole(principal, 'admin')
          : mayAnswer(agent, principal) ||
            request.escalated_to.some((to) => isAddressed(principal, to)),
    });
  } catch (error) {
    if (!isParleyError(error)) throw error;
    notify(
      error.code === 'forbidden'
        ? `Only ${(agent.approverRoles ?? []).join(', ')} may answer this request.`
        : error.code === 'stale_input' && error.message.startsWith('arguments_digest')
          ? 'This card no longer shows the arguments of the request; nothing was answered.'
          : 'This request was already answered.',
    );
  }
}
