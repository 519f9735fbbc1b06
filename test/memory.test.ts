import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { applyMemoryEffects } from '../src/store/applyMemoryEffects.js';
import { deleteMemory } from '../src/store/deleteMemory.js';
import { listMemories } from '../src/store/listMemories.js';
import { anyWordQuery, recallMemories } from '../src/store/recallMemories.js';
import { MemoryEffects } from '../src/tools/memory/effects.js';
import { builtInTools, runTool } from '../src/tools/registry.js';
import type { CallScope } from '../src/tools/types.js';
import { openTestDb } from './support/db.js';

// Memory as buffered effects, on the engine under test (PGlite or PostgreSQL): full-text
// search must rank the same way on both.

let db: Db;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ db, close } = await openTestDb());
});
afterAll(async () => {
  await close();
});

const alice = { tenant: 'acme', agent: 'helper', user: 'alice' };
const count = async () =>
  (await db.query<{ n: number }>('select count(*)::int as n from memories')).rows[0]?.n;

async function commit(owner: typeof alice, effects: MemoryEffects) {
  return db.transaction((tx) =>
    applyMemoryEffects(tx, { ...owner, sessionId: 'S1' }, effects.list()),
  );
}

describe('applyMemoryEffects', () => {
  it('writes nothing until applied, and applies each effect once', async () => {
    const before = await count();
    const effects = new MemoryEffects();
    const id = effects.remember('Alice prefers tea over coffee');
    expect(await count()).toBe(before);
    expect(await commit(alice, effects)).toEqual({ remembered: 1, forgotten: 0 });
    // A retried commit with the same (saved and restored) effects writes nothing more.
    const restored = new MemoryEffects(JSON.parse(JSON.stringify(effects.list())));
    expect(await commit(alice, restored)).toEqual({ remembered: 0, forgotten: 0 });
    expect(await count()).toBe((before ?? 0) + 1);
    const page = await listMemories(
      db,
      { tenant: 'acme', user: 'alice', agent: null },
      { limit: 10, cursor: null },
    );
    expect(page.items.map((item) => item.memory_id)).toContain(id);
  });

  it('rolls back with the turn: a failed commit transaction leaves nothing', async () => {
    const before = await count();
    const effects = new MemoryEffects();
    effects.remember('written in a turn that never commits');
    await expect(
      db.transaction(async (tx) => {
        await applyMemoryEffects(tx, { ...alice, sessionId: 'S1' }, effects.list());
        throw new Error('the turn was cancelled before its commit');
      }),
    ).rejects.toThrow('cancelled');
    expect(await count()).toBe(before);
  });

  it("forgets only the owner's memories, and a replayed remember does not resurrect one", async () => {
    const first = new MemoryEffects();
    const id = first.remember('Alice lives in Lyon');
    await commit(alice, first);
    const bob = { ...alice, user: 'bob' };
    const bobForgets = new MemoryEffects();
    bobForgets.forget(id);
    expect(await commit(bob, bobForgets)).toEqual({ remembered: 0, forgotten: 0 });
    const aliceForgets = new MemoryEffects();
    aliceForgets.forget(id);
    expect(await commit(alice, aliceForgets)).toEqual({ remembered: 0, forgotten: 1 });
    expect(await commit(alice, first)).toEqual({ remembered: 0, forgotten: 0 });
    const recalled = await recallMemories(db, alice, 'Lyon', { pending: [], forgotten: [] }, 10);
    expect(recalled).toEqual([]);
  });
});

describe('recallMemories (full-text search)', () => {
  const owner = { tenant: 'acme', agent: 'ranker', user: 'carol' };

  beforeAll(async () => {
    const effects = new MemoryEffects();
    effects.remember('Carol has a dog named Biscuit');
    effects.remember('Carol is allergic to peanuts');
    effects.remember("Carol's favourite colours are green and blue");
    effects.remember('Carol walks her dog every morning before work');
    await commit(owner, effects);
    const other = new MemoryEffects();
    other.remember('Dan has a dog too');
    await commit({ ...owner, user: 'dan' }, other);
    await commit({ ...owner, tenant: 'globex' }, other);
  });

  it('matches any word with stemming and ranks better matches first', async () => {
    const found = await recallMemories(
      db,
      owner,
      'Which dogs does she walk?',
      { pending: [], forgotten: [] },
      10,
    );
    expect(found.map((memory) => memory.text)).toEqual([
      'Carol walks her dog every morning before work',
      'Carol has a dog named Biscuit',
    ]);
    expect(found[0]!.rank).toBeGreaterThan(found[1]!.rank);
    const colours = await recallMemories(db, owner, 'colour', { pending: [], forgotten: [] }, 10);
    expect(colours.map((memory) => memory.text)).toEqual([
      "Carol's favourite colours are green and blue",
    ]);
  });

  it("includes this turn's buffered memories and leaves out the ones it forgot", async () => {
    const turn = new MemoryEffects();
    turn.remember('Carol adopted a second dog, Pretzel');
    const walks = (
      await recallMemories(db, owner, 'walks', { pending: [], forgotten: [] }, 10)
    )[0]!;
    turn.forget(walks.memory_id);
    const found = await recallMemories(
      db,
      owner,
      'dog',
      { pending: turn.pending(), forgotten: [...turn.forgotten()] },
      10,
    );
    expect(found.map((memory) => [memory.text, memory.pending])).toEqual(
      expect.arrayContaining([
        ['Carol adopted a second dog, Pretzel', true],
        ['Carol has a dog named Biscuit', false],
      ]),
    );
    expect(found).toHaveLength(2);
  });

  it('is scoped to tenant, agent and user, and empty for a query without words', async () => {
    expect(
      await recallMemories(
        db,
        { ...owner, agent: 'other' },
        'dog',
        { pending: [], forgotten: [] },
        10,
      ),
    ).toEqual([]);
    const dan = await recallMemories(
      db,
      { ...owner, user: 'dan' },
      'dog',
      { pending: [], forgotten: [] },
      10,
    );
    expect(dan.map((memory) => memory.text)).toEqual(['Dan has a dog too']);
    expect(await recallMemories(db, owner, '?! …', { pending: [], forgotten: [] }, 10)).toEqual([]);
    expect(
      await recallMemories(db, owner, 'the and of', { pending: [], forgotten: [] }, 10),
    ).toEqual([]);
    expect(anyWordQuery("it's a dog's life: 'x' | !y")).toBe('it | s | a | dog | life | x | y');
  });
});

describe('listMemories and deleteMemory', () => {
  it('pages newest first, filters by user and agent, and deletes only where allowed', async () => {
    const owner = { tenant: 'pager', agent: 'a', user: 'erin' };
    const effects = new MemoryEffects();
    const ids = [1, 2, 3].map((n) => effects.remember(`memory number ${n}`));
    await commit(owner, effects);
    const other = new MemoryEffects();
    other.remember("frank's");
    await commit({ ...owner, user: 'frank' }, other);
    const first = await listMemories(
      db,
      { tenant: 'pager', user: 'erin', agent: null },
      { limit: 2, cursor: null },
    );
    expect(first.items.map((item) => item.memory_id)).toEqual([ids[2], ids[1]]);
    expect(first.items[0]).toMatchObject({
      agent: 'a',
      user: 'erin',
      text: 'memory number 3',
      session_id: 'S1',
    });
    const cursor = JSON.parse(Buffer.from(first.next_cursor!, 'base64url').toString())[0];
    const second = await listMemories(
      db,
      { tenant: 'pager', user: 'erin', agent: null },
      { limit: 2, cursor },
    );
    expect(second.items.map((item) => item.memory_id)).toEqual([ids[0]]);
    expect(second.next_cursor).toBeNull();
    const everyone = await listMemories(
      db,
      { tenant: 'pager', user: null, agent: 'a' },
      { limit: 10, cursor: null },
    );
    expect(everyone.items).toHaveLength(4);
    expect(await deleteMemory(db, 'pager', ids[0]!, 'frank')).toBe(false);
    expect(await deleteMemory(db, 'other-tenant', ids[0]!, null)).toBe(false);
    expect(await deleteMemory(db, 'pager', ids[0]!, 'erin')).toBe(true);
    expect(await deleteMemory(db, 'pager', ids[1]!, null)).toBe(true);
  });

  it('searches by words as recall does: any word, stemmed; none matches nothing', async () => {
    const owner = { tenant: 'searcher', agent: 'a', user: 'hana' };
    const effects = new MemoryEffects();
    const [tea, lyon, teas] = [
      'Hana prefers green tea',
      'Hana lives in Lyon',
      'Hana collects teas from Lyon',
    ].map((text) => effects.remember(text));
    await commit(owner, effects);
    const search = async (words: string) =>
      (
        await listMemories(
          db,
          { tenant: 'searcher', user: 'hana', agent: null, search: anyWordQuery(words) },
          { limit: 10, cursor: null },
        )
      ).items.map((item) => item.memory_id);
    expect(await search('GREEN')).toEqual([tea]);
    // Newest first, whichever word matched; "tea" finds "teas" too.
    expect(await search('tea')).toEqual([teas, tea]);
    expect(await search('lyon green')).toEqual([teas, lyon, tea]);
    expect(await search('?!')).toEqual([]);
    expect(await search('absent')).toEqual([]);
  });
});

describe('the remember, recall and forget tools', () => {
  const tools = () => builtInTools({ db });
  const scope = (memory: MemoryEffects): CallScope => ({
    tenant: 'acme',
    agent: 'toolbox',
    user: 'gina',
    sessionId: 'S9',
    callId: 'c1',
    workspaceDir: '/nonexistent',
    memory,
  });
  const call = (name: string, args: unknown, memory: MemoryEffects) =>
    runTool(tools().get(name)!, args, {
      signal: new AbortController().signal,
      timeoutMs: 5000,
      scope: scope(memory),
    });

  it('buffer in the turn, recall sees the buffer, the commit writes it', async () => {
    const turn = new MemoryEffects();
    const remembered = await call('remember', { text: 'Gina takes the 8:15 train' }, turn);
    expect(remembered).toMatchObject({
      ok: true,
      result: { memory_id: expect.stringMatching(/^mem_/) },
    });
    const id = (remembered as { result: { memory_id: string } }).result.memory_id;
    expect(await call('recall', { query: 'train' }, turn)).toMatchObject({
      ok: true,
      result: { memories: [{ memory_id: id, text: 'Gina takes the 8:15 train', pending: true }] },
    });
    // Nothing is stored while the turn runs: a new turn does not see it.
    expect(await call('recall', { query: 'train' }, new MemoryEffects())).toMatchObject({
      result: { memories: [] },
    });
    await db.transaction((tx) =>
      applyMemoryEffects(
        tx,
        { tenant: 'acme', agent: 'toolbox', user: 'gina', sessionId: 'S9' },
        turn.list(),
      ),
    );
    const next = await call('recall', { query: 'train' }, new MemoryEffects());
    expect(next).toMatchObject({
      result: { memories: [{ memory_id: id, created_at: expect.any(String) }] },
    });

    const later = new MemoryEffects();
    expect(await call('forget', { memory_id: id }, later)).toMatchObject({ ok: true });
    expect(await call('recall', { query: 'train' }, later)).toMatchObject({
      result: { memories: [] },
    });
    expect(await call('forget', { memory_id: 'mem_unknown' }, later)).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
    });
    expect(later.list().map((effect) => effect.kind)).toEqual(['forget']);
  });

  it('validate their arguments', async () => {
    const turn = new MemoryEffects();
    for (const [name, args] of [
      ['remember', { text: '' }],
      ['remember', { text: 'x'.repeat(2001) }],
      ['recall', {}],
      ['forget', { id: 'x' }],
    ] as const) {
      expect(await call(name, args, turn)).toMatchObject({
        ok: false,
        error: { code: 'invalid_arguments' },
      });
    }
    expect(turn.list()).toEqual([]);
  });
});
