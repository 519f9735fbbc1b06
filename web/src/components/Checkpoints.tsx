import { useCallback, useEffect, useState } from 'react';
import type { ParleyClient } from 'parley/client';
import { navigate } from '../router';
import { explainRequestError, formatCost, formatDateTime } from '../words';
import { forkSession, listCheckpoints, rewindSession, type Checkpoint } from './desktop/desktopApi';

/**
 * A session's checkpoints (every `done`: GET …/checkpoints), each with a fork into a new
 * conversation (POST …/fork) and a rewind of this one (POST …/rewind: the next turn's
 * history starts from there; an idle session only). Read again when `latest` moves.
 */
export function Checkpoints(props: { client: ParleyClient; sessionId: string; latest: number }) {
  const { client, sessionId, latest } = props;
  const [items, setItems] = useState<Checkpoint[] | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      const all: Checkpoint[] = [];
      let cursor: string | null = null;
      do {
        const page = await listCheckpoints(client, sessionId, cursor);
        all.push(...page.items);
        cursor = page.next_cursor;
      } while (cursor && all.length < 1000);
      setItems(all.reverse());
      setError(null);
    } catch (failure) {
      setError(explainRequestError(failure));
    }
  }, [client, sessionId]);

  useEffect(() => {
    void load();
  }, [load, latest]);

  async function fork(checkpoint: Checkpoint) {
    setBusy(`fork-${checkpoint.sequence}`);
    setMessage(null);
    try {
      const created = await forkSession(client, sessionId, checkpoint.sequence);
      navigate(`/s/${created.session_id}`);
    } catch (failure) {
      setMessage(explainRequestError(failure));
    } finally {
      setBusy(null);
    }
  }

  async function rewind(checkpoint: Checkpoint) {
    setBusy(`rewind-${checkpoint.sequence}`);
    setMessage(null);
    try {
      await rewindSession(client, sessionId, checkpoint.sequence);
      setMessage(
        `Rewound: the next message continues from the reply of ${formatDateTime(checkpoint.at)}.`,
      );
      await load();
    } catch (failure) {
      const code = (failure as { code?: string }).code;
      setMessage(
        code === 'session_busy'
          ? 'Only an idle conversation can be rewound: wait for the reply to finish.'
          : explainRequestError(failure),
      );
    } finally {
      setBusy(null);
    }
  }

  return (
    <div className="checkpoints" role="region" aria-label="Checkpoints">
      {error ? (
        <p className="error small" role="alert">
          {error}
        </p>
      ) : null}
      {items === null && !error ? <p aria-busy="true">Loading checkpoints…</p> : null}
      {items !== null && items.length === 0 ? (
        <p className="small muted">No checkpoints yet: each finished reply makes one.</p>
      ) : null}
      {message ? (
        <p className="small" role="status">
          {message}
        </p>
      ) : null}
      <ol>
        {(items ?? []).map((checkpoint) => (
          <li key={checkpoint.sequence} aria-label={`Checkpoint at ${checkpoint.sequence}`}>
            <span className="small">
              <time dateTime={checkpoint.at}>{formatDateTime(checkpoint.at)}</time> ·{' '}
              {checkpoint.transcript_position} messages · {checkpoint.usage.output_tokens} tokens
              out · {formatCost(checkpoint.usage.cost_usd)}
              {checkpoint.rewound ? ' · rewound away' : ''}
            </span>
            <span className="checkpoint-actions">
              <button type="button" disabled={busy !== null} onClick={() => void fork(checkpoint)}>
                Fork
              </button>
              <button
                type="button"
                disabled={busy !== null || checkpoint.rewound}
                onClick={() => void rewind(checkpoint)}
              >
                Rewind
              </button>
            </span>
          </li>
        ))}
      </ol>
    </div>
  );
}
