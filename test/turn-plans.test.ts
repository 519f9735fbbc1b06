import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitTurnStatement } from '../src/store/commitTurn.js';
import type { Db, Statement } from '../src/store/db.js';
import { startAttemptStatement } from '../src/store/startAttempt.js';
import { openTestDb } from './support/db.js';

/**
 * The plan a turn's statements keep when it is made on an empty `turns` table (a fresh
 * deployment): it must find the burst's turn by the whole primary key, not scan the
 * tenant's turns.
 */
describe("a turn's statements on a cold table", () => {
  let db: Db;
  let close: () => Promise<void>;

  beforeEach(async () => {
    ({ db, close } = await openTestDb());
  });

  afterEach(async () => {
    await close();
  });

  /** The generic plan (as a named statement keeps it) of `statement`, as text. */
  async function genericPlan(statement: Statement, args: string): Promise<string> {
    return db.transaction(async (tx) => {
      await tx.query('set local plan_cache_mode = force_generic_plan');
      await tx.query(`prepare cold_plan as ${statement.text}`);
      try {
        const plan = await tx.query<{ 'QUERY PLAN': string }>(
          `explain (costs off) execute cold_plan(${args})`,
        );
        return plan.rows.map((row) => row['QUERY PLAN']).join('\n');
      } finally {
        await tx.query('deallocate cold_plan');
      }
    });
  }

  /** The total cost PostgreSQL estimates for `statement` in `mode` (plan_cache_mode). */
  async function planCost(statement: Statement, args: string, mode: string): Promise<number> {
    return db.transaction(async (tx) => {
      await tx.query(`set local plan_cache_mode = ${mode}`);
      await tx.query(`prepare costed_plan as ${statement.text}`);
      try {
        const plan = await tx.query<{ 'QUERY PLAN': string }>(
          `explain execute costed_plan(${args})`,
        );
        const total = /cost=[\d.]+\.\.([\d.]+)/.exec(plan.rows[0]?.['QUERY PLAN'] ?? '');
        return Number(total?.[1]);
      } finally {
        await tx.query('deallocate costed_plan');
      }
    });
  }

  it('commit_turn keeps its generic plan: it costs no more than one made for the values', async () => {
    // PostgreSQL plans a named statement anew on every execution while its generic plan
    // looks costlier than the plans made for the values (a part that only the values
    // remove, such as a fallback beside a given parameter, costed once per usage row).
    const args = `'s', 'token', '[]', null, 1, array['t'], 'm', 'a', 'c', null, null, null, 0, 0, 0, '[{"model": "m"}]', 'default', 'u'`;
    const custom = await planCost(commitTurnStatement, args, 'force_custom_plan');
    const generic = await planCost(commitTurnStatement, args, 'force_generic_plan');
    expect(custom).toBeGreaterThan(0);
    expect(generic).toBeLessThanOrEqual(custom * 1.1);
  });

  it('start_attempt finds the turn by tenant and turn_id', async () => {
    const plan = await genericPlan(
      startAttemptStatement,
      `'s', 'token', '[]', null, 1, 't', null, array['t'], 1, 10, 1000, 'default', null, array['a']`,
    );
    expect(plan).toMatch(/Index Cond: .*tenant = \$12\).*turn_id = \(\$8\)\[1\]/);
    expect(plan).not.toMatch(/Filter: .*turn_id = ANY/);
  });

  it('commit_turn finds the turn by tenant and turn_id', async () => {
    const plan = await genericPlan(
      commitTurnStatement,
      `'s', 'token', '[]', null, 1, array['t'], 'm', 'a', 'c', null, null, null, 0, 0, 0, '[]', 'default', 'u'`,
    );
    expect(plan).toMatch(/Index Cond: .*tenant = \$17\).*turn_id = \(\$6\)\[1\]/);
    expect(plan).not.toMatch(/Filter: .*turn_id = ANY/);
  });
});
