import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ParleyError } from '../src/errors.js';
import { admitTurn, type AdmitTurnInput } from '../src/store/admitTurn.js';
import { migrate } from '../src/store/migrate.js';
import { readEvents } from '../src/store/readEvents.js';
import { trustedViewer } from '../src/store/visibility.js';
import { openBeforeMigration } from './support/db.js';

// Migration 0065 stores a turn's fingerprint as bytes. A turn admitted before it must still
// be recognised by a retry (same input: the same answer; other input: a conflict), and the
// journal written before it must read exactly as it did.
describe('migrating a journal written before 0065', () => {
  it('reads the same events and replays the same admissions', async () => {
    // Every migration but 0065 first: the database as the previous version left it.
    const { db, close } = await openBeforeMigration(65);
    try {
      // One answered turn as the previous version wrote it: a hex fingerprint, the reply's
      // text in its delta and in the transcript, `message` and `done` referring to their rows.
      const message = 'hello there';
      const fingerprint = createHash('sha256')
        .update(JSON.stringify([message, null]))
        .digest('hex');
      await db.query(`insert into sessions (session_id, tenant, agent, last_sequence,
                                            input_count, input_cursor)
                      values ('s1', 'acme', 'default', 5, 1, 1)`);
      await db.query(
        `insert into turns (tenant, turn_id, session_id, position, state, fingerprint,
                            admitted_sequence, message_id, answered_by)
         values ('acme', 't1', 's1', 1, 'done', $1, 1, 'msg_user', 't1')`,
        [fingerprint],
      );
      await db.query(`insert into messages (message_id, tenant, session_id, turn_id, role, author,
                                            content, sequence)
                      values ('msg_user', 'acme', 's1', 't1', 'user', 'alice', 'hello there', 1),
                             ('msg_reply', 'acme', 's1', 't1', 'assistant', 'default',
                              'You said: hello there', 5)`);
      await db.query(`insert into events (session_id, sequence, type, turn_id, payload,
                                          message_id)
                      values ('s1', 1, 'message', 't1', '{}', 'msg_user'),
                             ('s1', 2, 'turn_started', 't1',
                              '{"attempt": 1, "turn_ids": ["t1"]}', null),
                             ('s1', 3, 'text_delta', 't1',
                              '{"delta": "You said: hello there"}', null),
                             ('s1', 4, 'usage', 't1',
                              '{"model": "demo/echo", "input_tokens": 2, "output_tokens": 4}', null),
                             ('s1', 5, 'done', 't1', '{"turn_ids": ["t1"]}', 'msg_reply')`);
      const before = await readEvents(db, 's1', 0, 100);

      expect(await migrate(db)).toEqual(['0065_compact_journal.sql']);
      expect(await readEvents(db, 's1', 0, 100)).toEqual(before);
      expect(before.map((event) => event.type)).toEqual([
        'message',
        'turn_started',
        'text_delta',
        'usage',
        'done',
      ]);

      const retry: AdmitTurnInput = {
        tenant: 'acme',
        author: 'alice',
        viewer: trustedViewer,
        turnId: 't1',
        sessionId: 's1',
        agent: null,
        defaultAgent: 'default',
        greetings: new Map([['default', null]]),
        visibilities: new Map([['default', 'tenant']]),
        message,
        option: null,
        attachments: [],
        triggers: new Map([['default', true]]),
        pendingInput: new Map([['default', 'queue']]),
      };
      expect(await admitTurn(db, retry)).toEqual({
        session_id: 's1',
        turn_id: 't1',
        sequence: 1,
        state: 'accepted',
      });
      const conflict = await admitTurn(db, { ...retry, message: 'something else' }).catch(
        (error: unknown) => error,
      );
      expect(conflict).toBeInstanceOf(ParleyError);
      expect((conflict as ParleyError).code).toBe('turn_conflict');
      // Nothing was written by either retry.
      expect((await readEvents(db, 's1', 0, 100)).length).toBe(5);
    } finally {
      await close();
    }
  });
});
