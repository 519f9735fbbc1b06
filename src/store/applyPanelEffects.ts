import { newEvent, type NewEvent } from '../protocol/events.js';
import type { Queryable } from './db.js';
import { insertPanel, updatePanel } from './panels.js';
import type { BufferedEffect, PanelEffect } from './types.js';

/** The channel a panel is on when its maker names none (seed: `agency.panel`). */
export const defaultPanelChannel = 'agency.panel';

function panelEffects(effects: readonly BufferedEffect[]): PanelEffect[] {
  return effects.filter(
    (effect): effect is PanelEffect =>
      effect.kind === 'panel_show' || effect.kind === 'panel_update',
  );
}

/** The `panel` events a turn's panel effects journal with its reply, in the order made. */
export function panelEvents(turnId: string, effects: readonly BufferedEffect[]): NewEvent[] {
  return panelEffects(effects).map((effect) =>
    effect.kind === 'panel_show'
      ? newEvent('panel', turnId, {
          action: 'shown',
          panel_id: effect.panel_id,
          scope: effect.scope,
          title: effect.title,
          channel: effect.channel,
          document: effect.document,
          by: 'tool',
        })
      : newEvent('panel', turnId, {
          action: 'updated',
          panel_id: effect.panel_id,
          ...(effect.title !== undefined ? { title: effect.title } : {}),
          ...(effect.document !== undefined ? { document: effect.document } : {}),
          by: 'tool',
        }),
  );
}

/**
 * Stores a turn's panels inside the transaction that commits its reply, in the order the
 * turn made them: a shown `session` or `workspace` panel is inserted (an ephemeral one is
 * only journaled), an update changes a panel of this session or of the turn's user. Both
 * are idempotent by panel id and content, so a retried commit changes nothing. A
 * `workspace` panel lands in the session's workspace (none: the user's own desktop) and
 * outlives the session.
 */
export async function applyPanelEffects(
  tx: Queryable,
  owner: { tenant: string; user: string; sessionId: string },
  effects: readonly BufferedEffect[],
): Promise<void> {
  for (const effect of panelEffects(effects)) {
    if (effect.kind === 'panel_show') {
      if (effect.scope === 'ephemeral') continue;
      const workspace =
        effect.scope === 'workspace'
          ? await tx.query<{ workspace_id: string | null }>(
              'select workspace_id from sessions where session_id = $1',
              [owner.sessionId],
            )
          : null;
      await insertPanel(tx, {
        id: effect.panel_id,
        tenant: owner.tenant,
        owner: owner.user,
        scope: effect.scope,
        sessionId: owner.sessionId,
        workspaceId: workspace?.rows[0]?.workspace_id ?? null,
        title: effect.title,
        channel: effect.channel,
        document: effect.document,
      });
    } else {
      await updatePanel(tx, owner.tenant, effect.panel_id, {
        ...(effect.title !== undefined ? { title: effect.title } : {}),
        ...(effect.document !== undefined ? { document: effect.document } : {}),
      });
    }
  }
}
