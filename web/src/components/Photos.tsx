import { useCallback, useEffect, useState } from 'react';
import type { ParleyClient, PhotoInfo } from 'parley/client';
import { draftOf, handDrafts, objectUrlOf } from '../media';
import { navigate } from '../router';
import { explainRequestError, formatDateTime } from '../words';

type Origin = 'all' | 'upload' | 'generated';

const pageSize = 30;

/** Object URLs of photos already fetched, by photo id (a photo's bytes never change). */
const photoUrls = new Map<string, Promise<string>>();

export function usePhotoUrl(client: ParleyClient, photoId: string): string | null {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    let found = photoUrls.get(photoId);
    if (!found) {
      found = client.photoContent(photoId).then(objectUrlOf);
      found.catch(() => photoUrls.delete(photoId));
      photoUrls.set(photoId, found);
    }
    found.then(
      (loaded) => live && setUrl(loaded),
      () => {},
    );
    return () => {
      live = false;
    };
  }, [client, photoId]);
  return url;
}

export const nameOf = (photo: PhotoInfo) => photo.title ?? 'Untitled photo';
const sizeOf = (bytes: number) =>
  bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(bytes < 10240 ? 1 : 0)} KiB`;

/**
 * The photo explorer: the user's own photos (uploaded here, sent in a conversation, or
 * made by image generation), newest first, filtered by origin, a page at a time. A photo
 * opens to be renamed, deleted, or taken into a new conversation.
 */
export function Photos(props: {
  client: ParleyClient;
  agent: string | null;
  onCreated: () => void;
}) {
  const { client } = props;
  const [origin, setOrigin] = useState<Origin>('all');
  const [photos, setPhotos] = useState<PhotoInfo[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const [openId, setOpenId] = useState<string | null>(null);

  const load = useCallback(
    async (from: string | null) => {
      setLoading(true);
      setError(null);
      try {
        const page = await client.listPhotos({
          origin: origin === 'all' ? undefined : origin,
          limit: pageSize,
          cursor: from,
        });
        setPhotos((shown) => (from === null ? page.items : [...shown, ...page.items]));
        setCursor(page.next_cursor);
      } catch (failure) {
        setError(explainRequestError(failure));
      } finally {
        setLoading(false);
      }
    },
    [client, origin],
  );

  useEffect(() => {
    void load(null);
  }, [load]);

  const open = photos.find((photo) => photo.photo_id === openId) ?? null;
  return (
    <section className="photos" aria-label="Photos">
      <header className="photos-header">
        <h2>Photos</h2>
        <label>
          Show{' '}
          <select
            aria-label="Origin"
            value={origin}
            onChange={(event) => {
              setOrigin(event.target.value as Origin);
              setOpenId(null);
            }}
          >
            <option value="all">All</option>
            <option value="upload">Uploads</option>
            <option value="generated">Generated</option>
          </select>
        </label>
      </header>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      {open ? (
        <PhotoDetail
          key={open.photo_id}
          {...props}
          photo={open}
          onChanged={(changed) =>
            setPhotos((shown) =>
              shown.map((photo) => (photo.photo_id === changed.photo_id ? changed : photo)),
            )
          }
          onDeleted={() => {
            setPhotos((shown) => shown.filter((photo) => photo.photo_id !== open.photo_id));
            setOpenId(null);
          }}
          onClose={() => setOpenId(null)}
        />
      ) : null}
      {!loading && photos.length === 0 && !error ? (
        <p className="muted">
          No photos yet. Images sent in a conversation, and images an agent makes, land here.
        </p>
      ) : null}
      <ul className="photo-grid" aria-label="Photo library" aria-busy={loading}>
        {photos.map((photo) => (
          <li key={photo.photo_id}>
            <button
              type="button"
              aria-label={`Open ${nameOf(photo)}`}
              aria-pressed={photo.photo_id === openId}
              onClick={() => setOpenId(photo.photo_id)}
            >
              <Thumbnail client={client} photo={photo} />
              <span className="small">{nameOf(photo)}</span>
              <span className="small muted">
                {photo.origin === 'generated' ? 'generated' : 'upload'} ·{' '}
                {formatDateTime(photo.created_at)}
              </span>
            </button>
          </li>
        ))}
      </ul>
      {cursor ? (
        <button type="button" disabled={loading} onClick={() => void load(cursor)}>
          More
        </button>
      ) : null}
    </section>
  );
}

function Thumbnail(props: { client: ParleyClient; photo: PhotoInfo }) {
  const url = usePhotoUrl(props.client, props.photo.photo_id);
  return url ? (
    <img src={url} alt={nameOf(props.photo)} data-photo-id={props.photo.photo_id} />
  ) : (
    <span className="thumbnail-placeholder" aria-hidden="true" />
  );
}

function PhotoDetail(props: {
  client: ParleyClient;
  agent: string | null;
  photo: PhotoInfo;
  onCreated: () => void;
  onChanged: (photo: PhotoInfo) => void;
  onDeleted: () => void;
  onClose: () => void;
}) {
  const { client, photo } = props;
  const url = usePhotoUrl(client, photo.photo_id);
  const [title, setTitle] = useState(photo.title ?? '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function act(action: () => Promise<void>) {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (failure) {
      setError(explainRequestError(failure));
    } finally {
      setBusy(false);
    }
  }

  const save = () =>
    act(async () => {
      props.onChanged(await client.updatePhoto(photo.photo_id, { title: title.trim() || null }));
    });
  const remove = () =>
    act(async () => {
      await client.deletePhoto(photo.photo_id);
      props.onDeleted();
    });
  // A new conversation whose composer holds the photo, attached to the session already
  // (from the library: not uploaded again, so the library does not hold it twice).
  const converse = () =>
    act(async () => {
      const [session, media] = await Promise.all([
        client.createSession(props.agent ? { agent: props.agent } : {}),
        client.photoContent(photo.photo_id),
      ]);
      const attached = await client.attachPhoto(session.session_id, photo.photo_id);
      const file = new Blob([media.bytes as BlobPart], { type: media.mediaType });
      const draft = { ...draftOf(file, nameOf(photo)), attachmentId: attached.attachment_id };
      handDrafts(session.session_id, [draft]);
      props.onCreated();
      navigate(`/s/${session.session_id}`);
    });

  return (
    <section className="photo-detail" aria-label="Photo">
      {url ? <img src={url} alt={nameOf(photo)} /> : null}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
      >
        <label>
          Title
          <input
            aria-label="Photo title"
            value={title}
            maxLength={200}
            onChange={(event) => setTitle(event.target.value)}
          />
        </label>
        <p className="small muted">
          {photo.media_type} · {sizeOf(photo.size)} ·{' '}
          {photo.origin === 'generated' ? 'generated' : 'uploaded'}{' '}
          {formatDateTime(photo.created_at)}
        </p>
        {error ? (
          <p className="error small" role="alert">
            {error}
          </p>
        ) : null}
        <div className="row">
          <button type="submit" className="primary" disabled={busy}>
            Save title
          </button>
          <button type="button" disabled={busy} onClick={() => void converse()}>
            Open in a conversation
          </button>
          <button type="button" className="danger" disabled={busy} onClick={() => void remove()}>
            Delete
          </button>
          <button type="button" onClick={props.onClose}>
            Close
          </button>
        </div>
      </form>
    </section>
  );
}
