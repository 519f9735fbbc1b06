import { newEffectId, newMemoryId } from '../../ids.js';
import { foldStateEffects, type FoldedStateChange } from '../../store/applyStateChange.js';
import type { BufferedEffect, PanelEffect } from '../../store/types.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** The longest memory a turn may store, in characters. */
export const MAX_MEMORY_CHARS = 2000;

/**
 * A turn's buffered memory writes (seed 000's buffered effects), and its changes of the
 * session's domain state (`update_state`, tools/state/). `remember` and `forget`
 * only record what to do; `store/applyMemoryEffects.ts` does it inside the transaction
 * that commits the turn's reply. Plain JSON in and out (`list()`, the constructor), so the
 * runtime can keep the buffer with the burst it saves between steps: a new owner after a
 * crash then applies the same effect ids, which makes a retried turn write once.
 */
export class MemoryEffects {
  private readonly effects: BufferedEffect[];

  constructor(saved: readonly BufferedEffect[] = []) {
    this.effects = saved.map((effect) => ({ ...effect }));
  }

  /** Buffers a new memory; returns the id it will have once the turn commits. */
  remember(text: string): string {
    const memoryId = newMemoryId();
    this.effects.push({ kind: 'remember', effect_id: newEffectId(), memory_id: memoryId, text });
    return memoryId;
  }

  forget(memoryId: string): void {
    this.effects.push({ kind: 'forget', effect_id: newEffectId(), memory_id: memoryId });
  }

  /** Memories this turn buffered and did not forget again, oldest first. */
  pending(): { memory_id: string; text: string }[] {
    const forgotten = this.forgotten();
    return this.effects.flatMap((effect) =>
      effect.kind === 'remember' && !forgotten.has(effect.memory_id)
        ? [{ memory_id: effect.memory_id, text: effect.text }]
        : [],
    );
  }

  /** Ids this turn asked to forget. */
  forgotten(): Set<string> {
    return new Set(
      this.effects.flatMap((effect) => (effect.kind === 'forget' ? [effect.memory_id] : [])),
    );
  }

  /** Whether this turn buffered a memory with this id (not yet forgotten). */
  holds(memoryId: string): boolean {
    return this.pending().some((memory) => memory.memory_id === memoryId);
  }

  /** Buffers the session's new domain state (validated by the caller). */
  changeState(change: FoldedStateChange): void {
    this.effects.push({ kind: 'state', effect_id: newEffectId(), ...change });
  }

  /**
   * What this turn did to the session's state so far, folded: the last data, the last
   * result set (if any), and whether any change completed the session. Null: none.
   */
  state(): FoldedStateChange | null {
    return foldStateEffects(this.effects);
  }

  /** Buffers a panel shown or changed (checked by the caller). */
  panel(effect: DistributiveOmit<PanelEffect, 'effect_id'>): void {
    this.effects.push({ ...effect, effect_id: newEffectId() });
  }

  /** The panel this turn showed under `panelId`, as its later updates left it; null: none. */
  shownPanel(panelId: string): Extract<PanelEffect, { kind: 'panel_show' }> | null {
    let shown: Extract<PanelEffect, { kind: 'panel_show' }> | null = null;
    for (const effect of this.effects) {
      if (effect.kind === 'panel_show' && effect.panel_id === panelId) shown = { ...effect };
      if (effect.kind === 'panel_update' && effect.panel_id === panelId && shown) {
        shown = {
          ...shown,
          ...(effect.title !== undefined ? { title: effect.title } : {}),
          ...(effect.document !== undefined ? { document: effect.document } : {}),
        };
      }
    }
    return shown;
  }

  /** Every effect in the order the turn made them: what to save and what to apply. */
  list(): BufferedEffect[] {
    return this.effects.map((effect) => ({ ...effect }));
  }
}
