import type { BufferedEffect } from './types.js';
import type { Queryable } from './db.js';

/** Whose memories a turn writes: the user it answers, with this agent, in this tenant. */
export interface MemoryOwner {
  tenant: string;
  agent: string;
  user: string;
}

/**
 * Applies a turn's buffered memory effects, in the order the turn made them. Meant to run
 * inside the transaction that commits the turn's reply, so a dropped or cancelled turn
 * writes nothing. Each effect is recorded by id first and applied only if it was not
 * recorded before: applying the same effects again (a retried commit) changes nothing,
 * and a `remember` replayed after the memory was forgotten does not bring it back. A
 * `forget` only deletes the owner's own memory.
 */
export async function applyMemoryEffects(
  tx: Queryable,
  owner: MemoryOwner & { sessionId: string | null },
  effects: readonly BufferedEffect[],
): Promise<{ remembered: number; forgotten: number }> {
  let remembered = 0;
  let forgotten = 0;
  for (const effect of effects) {
    // State changes are applied by applyStateChange.ts (the last one of the turn wins),
    // panels by applyPanelEffects.ts.
    if (effect.kind !== 'remember' && effect.kind !== 'forget') continue;
    const fresh = await tx.query(
      `insert into memory_effects (effect_id, tenant) values ($1, $2)
       on conflict (effect_id) do nothing`,
      [effect.effect_id, owner.tenant],
    );
    if (fresh.rowCount === 0) continue;
    if (effect.kind === 'remember') {
      const inserted = await tx.query(
        `insert into memories (memory_id, tenant, agent, user_id, text, session_id)
         values ($1, $2, $3, $4, $5, $6)
         on conflict (memory_id) do nothing`,
        [effect.memory_id, owner.tenant, owner.agent, owner.user, effect.text, owner.sessionId],
      );
      remembered += inserted.rowCount;
    } else {
      const deleted = await tx.query(
        `delete from memories
          where memory_id = $1 and tenant = $2 and agent = $3 and user_id = $4`,
        [effect.memory_id, owner.tenant, owner.agent, owner.user],
      );
      forgotten += deleted.rowCount;
    }
  }
  return { remembered, forgotten };
}
