import type { ParleyClient, SessionProjection } from '../../client/index.js';
import type { Screen } from './screen.js';

/** The session asked for on the command line, or the agent for a new one. */
export interface SessionChoice {
  session?: string | undefined;
  agent?: string | undefined;
}

/**
 * The session to chat in: the one named with --session, else one picked from the recent
 * ones, or a new one. Null when the chat ended before a choice was made.
 */
export async function pickSession(
  client: ParleyClient,
  screen: Screen,
  choice: SessionChoice,
): Promise<SessionProjection | null> {
  if (choice.session) return client.getSession(choice.session);
  const page = await client.listSessions({ limit: 9 });
  if (page.items.length === 0) return createSession(client, screen, choice);
  screen.print('Recent sessions:');
  page.items.forEach((session, index) => {
    const title = (session.title ?? '(untitled)').slice(0, 40).padEnd(42);
    screen.print(
      `  ${index + 1}) ${title}${session.state.padEnd(16)}${session.agent.padEnd(12)}${session.session_id}`,
    );
  });
  screen.print('  n) new session');
  for (;;) {
    const answer = (await screen.ask(`Choose a session [n]: `))?.trim().toLowerCase();
    if (answer === undefined) return null;
    if (answer === '' || answer === 'n') return createSession(client, screen, choice);
    const chosen = page.items[Number(answer) - 1];
    if (/^\d+$/.test(answer) && chosen) return client.getSession(chosen.session_id);
    screen.print(`Type a number from 1 to ${page.items.length}, or n.`);
  }
}

async function createSession(
  client: ParleyClient,
  screen: Screen,
  choice: SessionChoice,
): Promise<SessionProjection> {
  const created = await client.createSession(choice.agent ? { agent: choice.agent } : {});
  screen.status(`new session ${created.session_id} (agent ${created.agent})`);
  return created;
}
