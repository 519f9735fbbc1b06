import { useCallback, useEffect, useMemo, useState } from 'react';
import type { Me, ParleyClient } from 'parley/client';
import { collapsedSections, savePreferences } from '../../preferences';
import { Activity } from './Activity';
import { Agents } from './Agents';
import { DeskLayoutContext, type DeskLayout } from './DeskPanel';
import { DesktopPanels } from './DesktopPanels';
import { Dispatch } from './DispatchForm';
import { Executions } from './Executions';
import { Memories } from './Memories';
import { Schedules } from './Schedules';
import { UsageCharts } from './UsageCharts';
import { WorkspacePicker } from './WorkspacePicker';
import './desktop.css';

const sections = [
  ['executions', 'Executions'],
  ['panels', 'Panels'],
  ['dispatch', 'Dispatch'],
  ['activity', 'Activity'],
  ['usage', 'Usage'],
  ['schedules', 'Schedules'],
  ['memories', 'Memories'],
  ['agents', 'Agents'],
] as const;

/**
 * The operator's desktop: missions and executions live, dispatching, the activity stream,
 * schedules, usage and cost, agents' definitions and memories — each panel reads its own
 * API and keeps itself fresh (docs/web.md, "Desktop").
 */
export function Desktop(props: { client: ParleyClient; me: Me }) {
  const { client, me } = props;
  const admin = me.roles.includes('admin') || me.roles.includes('*');
  const [refresh, setRefresh] = useState(0);
  const [missions, setMissions] = useState<string[]>([]);
  const onMissions = useCallback(
    (names: string[]) =>
      setMissions((current) => (current.join('\n') === names.join('\n') ? current : names)),
    [],
  );
  const onDispatched = useCallback(() => setRefresh((count) => count + 1), []);
  // The active workspace (a preference): what the executions and panels are filtered by.
  const [workspaceId, setWorkspaceId] = useState<string | null>(null);
  // The layout (the `desktop` preference): which sections are collapsed.
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  useEffect(() => {
    client.preferences().then(
      (saved) => {
        setWorkspaceId(saved.workspace_id);
        setCollapsed(new Set(collapsedSections(saved)));
      },
      () => {},
    );
  }, [client]);
  const layout = useMemo<DeskLayout>(
    () => ({
      collapsed,
      toggle: (section) => {
        const next = new Set(collapsed);
        if (!next.delete(section)) next.add(section);
        setCollapsed(next);
        const list = sections.map(([id]) => id).filter((id) => next.has(id));
        void savePreferences(client, (current) => ({
          desktop: { ...current.desktop, collapsed: list },
        })).catch(() => {});
      },
    }),
    [client, collapsed],
  );

  return (
    <section className="desktop" aria-label="Operator's desktop">
      <header className="desk-header">
        <h2>Desktop</h2>
        <nav aria-label="Desktop sections" className="desk-nav">
          {sections.map(([id, label]) => (
            <a key={id} href={`#${id}`}>
              {label}
            </a>
          ))}
        </nav>
        <WorkspacePicker client={client} workspaceId={workspaceId} onChange={setWorkspaceId} />
      </header>
      <DeskLayoutContext.Provider value={layout}>
        <div className="desk-grid">
          <Executions
            client={client}
            missions={missions}
            refresh={refresh}
            workspaceId={workspaceId}
          />
          <DesktopPanels client={client} workspaceId={workspaceId} />
          <Dispatch client={client} onDispatched={onDispatched} onMissions={onMissions} />
          <Activity client={client} />
          <UsageCharts client={client} admin={admin} />
          <Schedules client={client} admin={admin} />
          <Memories client={client} admin={admin} />
          <Agents client={client} admin={admin} />
        </div>
      </DeskLayoutContext.Provider>
    </section>
  );
}
