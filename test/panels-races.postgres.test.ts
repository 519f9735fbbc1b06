import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ParleyEvent } from '../src/protocol/events.js';
import { readEvents } from '../src/store/readEvents.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Panels and workspaces changed at once by several writers on PostgreSQL (real row locks,
// a pool of connections): what the journal says of a session panel is what its row holds,
// a change that loses to a delete writes nothing, and no session is left in a workspace
// that is gone.
let server: TestServer;
const admin = { authorization: 'Bearer admin-key' };
const api = (method: string, path: string, body?: unknown) =>
  request(server.url, method, path, body, admin);

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: { keys: [{ key_env: 'K_ADMIN', tenant: 'acme', user: 'ada', roles: ['admin'] }] },
      agents: {
        default: { model: 'demo/echo', tools: { show_panel: 'allow', update_panel: 'allow' } },
      },
    },
    { K_ADMIN: 'admin-key' },
  );
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

const progress = (value: number) => ({ type: 'progress', value, max: 100 });

async function sessionPanel(): Promise<{ sessionId: string; panelId: string }> {
  const session = await api('POST', '/api/v1/chat/sessions', {});
  const sessionId = session.body.session_id as string;
  const made = await api('POST', '/api/v1/panels', {
    scope: 'session',
    session_id: sessionId,
    title: 'Race',
    document: progress(0),
  });
  expect(made.status).toBe(201);
  return { sessionId, panelId: made.body.id as string };
}

/** The panel events of one panel in its session's journal, oldest first. */
async function panelEvents(sessionId: string, panelId: string) {
  const events = await readEvents(server.db, sessionId, 0, 100_000);
  return events.filter(
    (event): event is Extract<ParleyEvent, { type: 'panel' }> =>
      event.type === 'panel' && event.panel_id === panelId,
  );
}

describe('a session panel changed by several writers at once', () => {
  it('ends as the last journaled change says, whoever wrote it', async () => {
    for (let round = 0; round < 10; round++) {
      const { sessionId, panelId } = await sessionPanel();
      // Four PUTs at once, and a reply of the agent's that updates the same panel.
      const turn = await api('POST', '/api/v1/chat/turns', {
        session_id: sessionId,
        turn_id: `race_${round}`,
        message: `/tool update_panel ${JSON.stringify({ panel_id: panelId, document: progress(99) })}`,
      });
      expect(turn.status).toBe(202);
      const puts = await Promise.all(
        [1, 2, 3, 4].map((value) =>
          api('PUT', `/api/v1/panels/${panelId}`, { title: 'Race', document: progress(value) }),
        ),
      );
      for (const put of puts) expect(put.status).toBe(200);
      await until(
        () => panelEvents(sessionId, panelId),
        (events) => events.some((event) => event.by === 'tool'),
        "the agent's update",
      );
      const events = await panelEvents(sessionId, panelId);
      expect(events.map((event) => event.action)).toEqual([
        'shown',
        'updated',
        'updated',
        'updated',
        'updated',
        'updated',
      ]);
      const row = await api('GET', `/api/v1/panels/${panelId}`);
      expect(row.body.document).toEqual((events.at(-1) as { document: unknown }).document);
    }
  });

  it('writes nothing for a change that loses to a delete', async () => {
    for (let round = 0; round < 15; round++) {
      const { sessionId, panelId } = await sessionPanel();
      const [put, deleted] = await Promise.all([
        api('PUT', `/api/v1/panels/${panelId}`, { title: 'Late', document: progress(50) }),
        api('DELETE', `/api/v1/panels/${panelId}`),
      ]);
      expect(deleted.status).toBe(204);
      const actions = (await panelEvents(sessionId, panelId)).map((event) => event.action);
      if (put.status === 200) {
        expect(actions).toEqual(['shown', 'updated', 'deleted']);
      } else {
        expect(put.status).toBe(404);
        expect(put.body.error).toBe('panel_not_found');
        expect(actions).toEqual(['shown', 'deleted']);
      }
      const row = await api('GET', `/api/v1/panels/${panelId}`);
      expect(row.status).toBe(404);
    }
  });
});

describe('a workspace deleted while sessions are made in it', () => {
  it('leaves no session in a workspace that is gone', async () => {
    const outcomes = { created: 0, refused: 0 };
    for (let round = 0; round < 10; round++) {
      const workspace = await api('POST', '/api/v1/workspaces', { name: `race ${round}` });
      expect(workspace.status).toBe(201);
      const workspaceId = workspace.body.workspace_id as string;
      const [deleted, ...made] = await Promise.all([
        api('DELETE', `/api/v1/workspaces/${workspaceId}`),
        ...[1, 2, 3].map(() => api('POST', '/api/v1/chat/sessions', { workspace_id: workspaceId })),
      ]);
      expect(deleted.status).toBe(204);
      for (const answer of made) {
        if (answer.status === 201) outcomes.created++;
        else {
          expect(answer.status).toBe(404);
          expect(answer.body.error).toBe('workspace_not_found');
          outcomes.refused++;
        }
      }
    }
    const dangling = await server.db.query<{ n: number }>(
      `select count(*)::int as n from sessions s
        where s.workspace_id is not null
          and not exists (select 1 from workspaces w where w.workspace_id = s.workspace_id)`,
    );
    expect(dangling.rows[0]?.n).toBe(0);
    expect(outcomes.created + outcomes.refused).toBe(30);
  });
});
