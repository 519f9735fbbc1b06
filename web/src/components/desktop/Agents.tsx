import { useCallback, useState } from 'react';
import type { AgentInfo, ParleyClient } from 'parley/client';
import { explainRequestError } from '../../words';
import { AgentEditor } from './AgentEditor';
import { DeskPanel } from './DeskPanel';
import { listAgents } from './desktopApi';
import { usePoll } from './poll';

const pollMs = 10_000;

/**
 * The tenant's agents (GET /api/v1/agents: model, revision, customized or shipped) and,
 * for an admin, one agent's definition (GET /api/v1/agents/{name}) to edit (PUT) or
 * restore to the shipped one (DELETE, after the diff from the current definition to the
 * shipped one, GET …/shipped), with the revisions the server kept (GET …/revisions): any
 * of them shown whole (GET …/revisions/{revision}) or diffed against the current one.
 */
export function Agents(props: { client: ParleyClient; admin: boolean }) {
  const { client, admin } = props;
  const [items, setItems] = useState<AgentInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [selected, setSelected] = useState<string | null>(null);

  const load = useCallback(
    async (current: () => boolean) => {
      try {
        const answer = await listAgents(client);
        if (!current()) return;
        setItems(answer.items);
        setError(null);
      } catch (failure) {
        if (current()) setError(explainRequestError(failure));
      }
    },
    [client],
  );
  usePoll(load, pollMs);

  const agent = items?.find((candidate) => candidate.name === selected) ?? null;
  return (
    <DeskPanel
      id="agents"
      title="Agents"
      wide
      error={error}
      loading={items === null ? 'Loading agents…' : false}
    >
      <ul className="desk-list">
        {(items ?? []).map((item) => (
          <li key={item.name} aria-label={`Agent ${item.name}`}>
            <div className="desk-card-head">
              <strong>{item.name}</strong>
              <span className="badge">{item.is_customized ? 'customized' : 'shipped'}</span>
              {item.shipped_changed ? (
                <span className="badge exec-blocked">newer shipped version</span>
              ) : null}
            </div>
            <p className="small muted">
              {item.model}
              {item.revision !== null ? ` · revision ${item.revision}` : ''}
              {item.namespace ? ` · ${item.namespace}` : ''}
            </p>
            {admin ? (
              <button
                type="button"
                aria-expanded={selected === item.name}
                aria-controls="desk-agent-editor"
                onClick={() => setSelected((current) => (current === item.name ? null : item.name))}
              >
                {selected === item.name ? 'Close' : 'Definition'}
              </button>
            ) : null}
          </li>
        ))}
      </ul>
      {!admin ? (
        <p className="small muted">Reading and editing definitions needs the admin role.</p>
      ) : null}
      {admin && agent ? (
        <AgentEditor
          key={agent.name}
          client={client}
          agent={agent}
          onChanged={() => void load(() => true)}
        />
      ) : null}
    </DeskPanel>
  );
}
