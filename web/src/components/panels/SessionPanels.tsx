import { useEffect, useRef, useState } from 'react';
import { newClientKey, type PanelView, type ParleyClient } from 'parley/client';
import type { EphemeralPanel } from '../../conversation/items';
import { PanelDocument, type SubmitForm } from './PanelDocument';

/**
 * The panels beside a conversation (docs/web.md, "Panels"): its stored `session` panels,
 * read again whenever the journal shows a panel change, and the ephemeral ones shown
 * while this page has been open — those from before it opened are gone with their stream.
 */
export function SessionPanels(props: {
  client: ParleyClient;
  sessionId: string;
  changedAt: number;
  ephemeral: EphemeralPanel[];
  openedAt: number | null;
}) {
  const { client, sessionId, changedAt } = props;
  const [stored, setStored] = useState<PanelView[]>([]);
  const formKeys = useRef(new Map<string, string>());

  useEffect(() => {
    let live = true;
    client.listPanels({ sessionId, limit: 50 }).then(
      (page) => live && setStored(page.items),
      () => {},
    );
    return () => {
      live = false;
    };
  }, [client, sessionId, changedAt]);

  const ephemeral =
    props.openedAt === null
      ? []
      : props.ephemeral.filter((panel) => panel.sequence > props.openedAt!);
  const shown = [
    ...ephemeral.map((panel) => ({ id: panel.id, title: panel.title, document: panel.document })),
    ...stored,
  ];
  if (shown.length === 0) return null;

  const submitFor =
    (panelId: string): SubmitForm =>
    async (form, values) => {
      // One turn id per panel and form until it is sent: a retried click is the same turn.
      const key = `${panelId}/${form.name}`;
      const turnId = formKeys.current.get(key) ?? newClientKey('form');
      formKeys.current.set(key, turnId);
      await client.submitPanelForm(panelId, { form: form.name, values }, { turnId });
      formKeys.current.delete(key);
    };

  return (
    <aside className="session-panels" aria-label="Panels">
      {shown.map((panel) => (
        <section key={panel.id} className="panel-card" aria-label={`Panel: ${panel.title}`}>
          <h3 className="panel-title">{panel.title}</h3>
          <PanelDocument
            component={panel.document}
            onSubmit={'owner' in panel ? submitFor(panel.id) : undefined}
          />
        </section>
      ))}
    </aside>
  );
}
