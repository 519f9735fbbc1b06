import { useEffect, useState } from 'react';
import type { ParleyClient, WorkspaceInfo } from 'parley/client';
import { savePreferences } from '../../preferences';
import { explainRequestError } from '../../words';

/**
 * The active workspace (the `workspace_id` preference): the desktop's executions and
 * panels are those of it. Saved with the rest of the preferences as they are.
 */
export function WorkspacePicker(props: {
  client: ParleyClient;
  workspaceId: string | null;
  onChange: (workspaceId: string | null) => void;
}) {
  const { client } = props;
  const [workspaces, setWorkspaces] = useState<WorkspaceInfo[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    client.listWorkspaces().then(
      (answer) => setWorkspaces(answer.items),
      (failure: unknown) => setError(explainRequestError(failure)),
    );
  }, [client]);

  const choose = async (value: string) => {
    const workspaceId = value === '' ? null : value;
    setError(null);
    try {
      await savePreferences(client, { workspace_id: workspaceId });
      props.onChange(workspaceId);
    } catch (failure) {
      setError(explainRequestError(failure));
    }
  };

  if (workspaces.length === 0 && props.workspaceId === null) return null;
  return (
    <label className="desk-workspace">
      <span className="small muted">Workspace</span>
      <select value={props.workspaceId ?? ''} onChange={(event) => void choose(event.target.value)}>
        <option value="">All</option>
        {workspaces.map((workspace) => (
          <option key={workspace.workspace_id} value={workspace.workspace_id}>
            {workspace.name}
          </option>
        ))}
      </select>
      {error ? (
        <span className="error small" role="alert">
          {error}
        </span>
      ) : null}
    </label>
  );
}
