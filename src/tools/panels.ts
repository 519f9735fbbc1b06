import { newPanelId } from '../ids.js';
import { checkPanelDocument, paletteTypes, type PanelComponent } from '../protocol/panels.js';
import { defaultPanelChannel } from '../store/applyPanelEffects.js';
import type { Queryable } from '../store/db.js';
import { readPanel } from '../store/panels.js';
import { ToolError, requireScope, type Tool } from './types.js';

export const showPanelTool = 'show_panel';
export const updatePanelTool = 'update_panel';

const documentDescription =
  'A panel component {"type": ...}; containers ("stack") hold "children". Types: ' +
  `${paletteTypes().join(', ')} (GET /api/v1/panels/palette has each one's JSON Schema). ` +
  'E.g. {"type":"stack","children":[{"type":"markdown","text":"# Orders"},' +
  '{"type":"table","columns":["id","state"],"rows":[["A17","shipped"]]}]}';

/** The document of a call, checked against the palette: a tool error names the path. */
function checkedDocument(value: unknown): PanelComponent {
  const checked = checkPanelDocument(value);
  if ('issue' in checked) {
    throw new ToolError(
      'invalid_arguments',
      `${checked.issue.path}: ${checked.issue.message}; nothing was shown`,
    );
  }
  return checked.document;
}

/**
 * `show_panel {title, document, scope?, channel?}` (docs/web.md, "Panels"): shows a UI panel
 * made of palette components — beside this conversation (`session`, the default), on the
 * user's desktop (`workspace`: the session's workspace, else the user's own), or only in the
 * streams open now (`ephemeral`). Buffered like a memory write: the turn's commit stores it
 * and journals it as a `panel` event; a dropped or cancelled turn shows nothing.
 */
export function createShowPanel(): Tool {
  return {
    name: showPanelTool,
    description:
      'Shows the user a UI panel (tables, charts, forms…) beside this conversation; it ' +
      'appears when this reply completes. Returns the panel_id for update_panel.',
    inputSchema: {
      type: 'object',
      properties: {
        title: { type: 'string', minLength: 1, maxLength: 200 },
        document: { type: 'object', description: documentDescription },
        scope: {
          type: 'string',
          enum: ['session', 'workspace', 'ephemeral'],
          description:
            'session: beside this conversation (default); workspace: on the desktop; ' +
            'ephemeral: only while the conversation is open',
        },
        channel: { type: 'string', minLength: 1, maxLength: 100 },
      },
      required: ['title', 'document'],
      additionalProperties: false,
    },
    async execute(args, context) {
      const scope = requireScope(showPanelTool, context);
      const call = args as {
        title: string;
        document: unknown;
        scope?: 'session' | 'workspace' | 'ephemeral';
        channel?: string;
      };
      const document = checkedDocument(call.document);
      const panelId = newPanelId();
      const panelScope = call.scope ?? 'session';
      scope.memory.panel({
        kind: 'panel_show',
        panel_id: panelId,
        scope: panelScope,
        title: call.title,
        channel: call.channel ?? defaultPanelChannel,
        document,
      });
      return { panel_id: panelId, scope: panelScope, status: 'shown when this reply completes' };
    },
  };
}

/**
 * `update_panel {panel_id, title?, document?}`: replaces the title or the whole document of a
 * panel this turn showed, of a panel of this conversation, or of one of the user's own;
 * buffered and journaled like `show_panel`.
 */
export function createUpdatePanel(db: Queryable): Tool {
  return {
    name: updatePanelTool,
    description:
      'Replaces the title and/or the whole document of a panel shown before (by panel_id); ' +
      'the change appears when this reply completes.',
    inputSchema: {
      type: 'object',
      properties: {
        panel_id: { type: 'string', minLength: 1, maxLength: 64 },
        title: { type: 'string', minLength: 1, maxLength: 200 },
        document: { type: 'object', description: documentDescription },
      },
      required: ['panel_id'],
      additionalProperties: false,
    },
    async execute(args, context) {
      const scope = requireScope(updatePanelTool, context);
      const call = args as { panel_id: string; title?: string; document?: unknown };
      if (call.title === undefined && call.document === undefined) {
        throw new ToolError('invalid_arguments', 'give a title, a document, or both');
      }
      const document = call.document === undefined ? undefined : checkedDocument(call.document);
      if (!scope.memory.shownPanel(call.panel_id)) {
        const stored = await readPanel(db, scope.tenant, call.panel_id);
        if (!stored || (stored.session_id !== scope.sessionId && stored.owner !== scope.user)) {
          throw new ToolError('not_found', `there is no panel ${call.panel_id} here`);
        }
      }
      scope.memory.panel({
        kind: 'panel_update',
        panel_id: call.panel_id,
        ...(call.title !== undefined ? { title: call.title } : {}),
        ...(document !== undefined ? { document } : {}),
      });
      return { panel_id: call.panel_id, status: 'updated when this reply completes' };
    },
  };
}
