import { useCallback, useState } from 'react';
import { newClientKey, type PanelView, type ParleyClient } from 'parley/client';
import { useLiveRefresh } from '../../live';
import { explainRequestError } from '../../words';
import { PanelDocument, type SubmitForm } from '../panels/PanelDocument';
import { DeskPanel } from './DeskPanel';

/**
 * The desktop's panels (docs/web.md, "Panels"): the workspace panels of the active
 * workspace — else the user's own desktop panels — made by people or by agents
 * (`show_panel` with scope `workspace`). Read again when the user stream shows a panel
 * change; a form submits to the panel's conversation.
 */
export function DesktopPanels(props: { client: ParleyClient; workspaceId: string | null }) {
  const { client, workspaceId } = props;
  const [panels, setPanels] = useState<PanelView[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      const page = workspaceId
        ? await client.listPanels({ workspaceId, limit: 50 })
        : await client.listPanels({ scope: 'workspace', limit: 50 });
      setPanels(page.items);
      setError(null);
    } catch (failure) {
      setError(explainRequestError(failure));
    }
  }, [client, workspaceId]);
  useLiveRefresh(
    load,
    (frame) =>
      frame.type === 'panel' ||
      frame.type === 'panel_removed' ||
      (frame.type === 'session_event' && frame.event.type === 'panel'),
    { fallbackMs: 5000 },
  );

  const submitFor = (panel: PanelView): SubmitForm | undefined =>
    panel.session_id === null
      ? undefined
      : async (form, values) => {
          await client.submitPanelForm(
            panel.id,
            { form: form.name, values },
            { turnId: newClientKey('form') },
          );
        };

  return (
    <DeskPanel
      id="panels"
      title="Panels"
      wide
      error={error}
      loading={panels === null ? 'Loading panels…' : false}
    >
      {panels === null ? null : panels.length === 0 ? (
        <p className="small muted">
          No panels yet. Agents show them with <code>show_panel</code> (scope <code>workspace</code>
          ), people with <code>POST /api/v1/panels</code>.
        </p>
      ) : (
        <div className="session-panels desk-panels">
          {panels.map((panel) => (
            <section key={panel.id} className="panel-card" aria-label={`Panel: ${panel.title}`}>
              <h4 className="panel-title">{panel.title}</h4>
              <PanelDocument component={panel.document} onSubmit={submitFor(panel)} />
            </section>
          ))}
        </div>
      )}
    </DeskPanel>
  );
}
