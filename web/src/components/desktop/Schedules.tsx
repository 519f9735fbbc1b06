import { useCallback, useState } from 'react';
import type { ParleyClient } from 'parley/client';
import { explainRequestError, formatDateTime, timeAgo, timeLeft } from '../../words';
import { listSchedules, type Schedule } from './desktopApi';
import { usePoll } from './poll';

const pollMs = 10_000;

/**
 * The tenant's schedules with their next and last fire (GET /api/v1/schedules). They are
 * defined in the configuration; the API has no call to enable or disable one yet.
 */
export function Schedules(props: { client: ParleyClient }) {
  const { client } = props;
  const [items, setItems] = useState<Schedule[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(
    async (current: () => boolean) => {
      try {
        const answer = await listSchedules(client);
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

  return (
    <section className="desk-panel" aria-labelledby="desk-schedules" id="schedules">
      <h3 id="desk-schedules">Schedules</h3>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      {items === null && !error ? <p aria-busy="true">Loading schedules…</p> : null}
      {items !== null && items.length === 0 ? (
        <p className="empty">No schedules are configured.</p>
      ) : null}
      <ul className="desk-list">
        {(items ?? []).map((schedule) => (
          <li key={schedule.name} aria-label={`Schedule ${schedule.name}`}>
            <div className="desk-card-head">
              <strong>{schedule.name}</strong>
            </div>
            <p className="small muted">
              runs {schedule.mission} · <code>{schedule.cron}</code> ({schedule.timezone}) · overlap{' '}
              {schedule.overlap} · catch-up {schedule.catch_up}
            </p>
            <dl className="desk-facts small">
              <dt>Next fire</dt>
              <dd>
                {schedule.next_fire_at ? (
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
          Schedules come from the configuration. Enabling and disabling one needs an API the server
          does not offer yet.
        </p>
      ) : null}
    </section>
  );
}
