import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import type { AgentConfig } from '../config/types.js';
import { foldInputs } from '../providers/foldedPrompt.js';
import type { QueuedTurn } from '../store/collectTurns.js';
import type { HistoryMessage } from '../store/startAttempt.js';

/**
 * The model's view before any step of the burst: the agent's instructions, the history
 * read when the attempt started (the last `history_messages` transcript messages before
 * the burst), and the burst's turns folded into one labelled user message.
 */
export function basePrompt(
  agent: AgentConfig,
  history: HistoryMessage[],
  turns: QueuedTurn[],
): LanguageModelV3Prompt {
  // In a room with several people, the model must know who said what.
  const authors = new Set(
    [...history.filter((message) => message.role === 'user'), ...turns].map(
      (message) => message.author,
    ),
  );
  const label = (author: string, text: string) => (authors.size > 1 ? `${author}: ${text}` : text);
  return [
    { role: 'system', content: agent.instructions },
    ...history.map((message) =>
      message.role === 'assistant'
        ? {
            role: 'assistant' as const,
            content: [{ type: 'text' as const, text: message.content }],
          }
        : {
            role: 'user' as const,
            content: [{ type: 'text' as const, text: label(message.author, message.content) }],
          },
    ),
    {
      role: 'user',
      content: [
        {
          type: 'text',
          text: foldInputs(turns.map((turn) => ({ author: turn.author, content: turnText(turn) }))),
        },
      ],
    },
  ];
}

/** A pressed option is applied first: the model reads the choice, then any text. */
function turnText(turn: QueuedTurn): string {
  if (!turn.option) return turn.content;
  const choice = `Selected option: ${turn.option.value}`;
  return turn.content.trim() ? `${choice}\n${turn.content}` : choice;
}
