import { useCallback, useRef, useState } from 'react';
import type { ParleyClient } from 'parley/client';
import { explainRequestError, formatDateTime, timeAgo, timeLeft } from '../../words';
import { listSchedules, switchSchedule, type Schedule } from './desktopApi';
import { usePoll } from './poll';
import { DeskPanel } from './DeskPanel';

const pollMs = 10_000;

/** What switching a schedule on does with the fire times it passed while off. */
const catchUpOnReturn: Record<string, string> = {
  none: 'the fire times it passed while off are skipped',
  one: 'one execution makes up for the fire times it passed while off',
  all: 'each fire time it passed while off starts an execution (up to the runtime’s limit)',
};

/**
 * The tenant's schedules with their next and last fire (GET /api/v1/schedules). They are
 * defined in the configuration; an admin switches one off and on again (PATCH
 * /api/v1/schedules/{name}): off, it does not fire; on again, its `catch_up` decides
 * about the fire times it passed meanwhile.
 */
export function Schedules(props: { client: ParleyClient; admin: boolean }) {
  const { client, admin } = props;
  const [items, setItems] = useState<Schedule[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [switching, setSwitching] = useState<string | null>(null);
  // A listing read before a switch answered must not undo it on the page.
  const switches = useRef(0);

  const load = useCallback(
    async (current: () => boolean) => {
      const before = switches.current;
      try {
        const answer = await listSchedules(client);
        if (!current() || switches.current !== before) return;
        setItems(answer.items);
        setError(null);
      } catch (failure) {
        if (current()) setError(explainRequestError(failure));
      }
    },
    [client],
  );
  usePoll(load, pollMs);

  async function flip(schedule: Schedule) {
    const enabled = !schedule.enabled;
    setSwitching(schedule.name);
    setMessage(null);
    try {
      const switched = await switchSchedule(client, schedule.name, enabled);
      switches.current += 1;
      setItems((current) =>
        (current ?? []).map((item) => (item.name === switched.name ? switched : item)),
      );
      setMessage(
        enabled
          ? `${schedule.name} is on again: ${catchUpOnReturn[switched.catch_up] ?? `catch-up ${switched.catch_up}`}.`
          : `${schedule.name} is off: it does not fire until it is switched on.`,
      );
    } catch (failure) {
      setMessage(explainRequestError(failure));
    } finally {
      setSwitching(null);
    }
  }

  return (
    <DeskPanel
      id="schedules"
      title="Schedules"
      error={error}
      loading={items === null ? 'Loading schedules…' : false}
    >
      {message ? (
        <p className="small muted" role="status">
          {message}
        </p>
      ) : null}
      {items !== null && items.length === 0 ? (
        <p className="empty">No schedules are configured.</p>
      ) : null}
      <ul className="desk-list">
        {(items ?? []).map((schedule) => (
          <li key={schedule.name} aria-label={`Schedule ${schedule.name}`}>
            <div className="desk-card-head">
              <strong>{schedule.name}</strong>
              {schedule.enabled ? null : <span className="badge schedule-off">off</span>}
              {admin ? (
                <label className="desk-switch small">
                  <input
                    type="checkbox"
                    role="switch"
                    checked={schedule.enabled}
                    disabled={switching === schedule.name}
                    aria-busy={switching === schedule.name}
                    onChange={() => void flip(schedule)}
                  />
                  Enabled
                </label>
              ) : null}
            </div>
            <p className="small muted">
              runs {schedule.mission} · <code>{schedule.cron}</code> ({schedule.timezone}) · overlap{' '}
              {schedule.overlap} · catch-up {schedule.catch_up}
            </p>
            <dl className="desk-facts small">
              <dt>Next fire</dt>
              <dd>
                {!schedule.enabled ? (
                  'none while off'
                ) : schedule.next_fire_at ? (
                  <>
                    <time dateTime={schedule.next_fire_at}>
                      {formatDateTime(schedule.next_fire_at)}
                    </time>{' '}
                    ({timeLeft(schedule.next_fire_at)})
                  </>
                ) : (
                  'none'
                )}
              </dd>
              <dt>Last fire</dt>
              <dd>
                {schedule.last_fire_at ? (
                  <time
                    dateTime={schedule.last_fire_at}
                    title={formatDateTime(schedule.last_fire_at)}
                  >
                    {timeAgo(schedule.last_fire_at)}
                  </time>
                ) : (
                  'never'
                )}
                {schedule.last_execution_id ? ` · execution ${schedule.last_execution_id}` : ''}
              </dd>
            </dl>
          </li>
        ))}
      </ul>
      {items !== null && items.length > 0 ? (
        <p className="small muted">
          Schedules come from the configuration;{' '}
          {admin ? 'switching one off stops its fires' : 'an admin may switch one off and on'}.
        </p>
      ) : null}
    </DeskPanel>
  );
}
