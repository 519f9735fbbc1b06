import { useCallback, useEffect, useState } from 'react';
import type { ParleyClient, PhotoInfo } from 'parley/client';
import { Avatar } from '../Avatar';
import { nameOf, usePhotoUrl } from '../Photos';
import { explainRequestError } from '../../words';

/** The largest side of an icon made of a photo, in pixels. */
const iconSide = 128;
/** The longest icon URL an agent definition takes (src/media/pictureUrl.ts). */
const maxIconChars = 65_536;
/** Photos listed at a time ("More" reads the next page). */
const photoPage = 24;

/**
 * A photo made into an icon: decoded, drawn at most 128×128 pixels on a canvas (its
 * proportions kept) and encoded as a PNG `data:` URL, which an agent definition takes as
 * its `icon` when at most 64 KiB long (128×128 pixels always are, in practice).
 */
export async function iconOf(media: { bytes: Uint8Array; mediaType: string }): Promise<string> {
  const bitmap = await createImageBitmap(
    new Blob([media.bytes as BlobPart], { type: media.mediaType }),
  );
  const scale = Math.min(1, iconSide / Math.max(bitmap.width, bitmap.height));
  const canvas = document.createElement('canvas');
  canvas.width = Math.max(1, Math.round(bitmap.width * scale));
  canvas.height = Math.max(1, Math.round(bitmap.height * scale));
  const context = canvas.getContext('2d');
  if (!context) throw new Error('This browser cannot draw the photo.');
  context.imageSmoothingQuality = 'high';
  context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  bitmap.close();
  const url = canvas.toDataURL('image/png');
  if (url.length > maxIconChars) {
    throw new Error(
      `The icon made of this photo is too large (${url.length} characters; at most ${maxIconChars}).`,
    );
  }
  return url;
}

/**
 * An agent's icon in its definition editor: a preview, a typed https URL, a photo of the
 * user's library (made small here), or none. Each choice changes the draft definition;
 * the editor's Save stores it.
 */
export function AgentIcon(props: {
  client: ParleyClient;
  agent: string;
  icon: string | null;
  disabled: boolean;
  onChange: (icon: string | null) => void;
}) {
  const { client, icon } = props;
  const [choosing, setChoosing] = useState(false);
  const [making, setMaking] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  const typed = icon !== null && !icon.startsWith('data:') ? icon : '';

  async function choose(photo: PhotoInfo) {
    setMaking(true);
    setFailure(null);
    try {
      props.onChange(await iconOf(await client.photoContent(photo.photo_id)));
      setChoosing(false);
    } catch (problem) {
      setFailure(explainRequestError(problem));
    } finally {
      setMaking(false);
    }
  }

  return (
    <div role="group" aria-label="Icon" className="agent-icon">
      <div className="desk-actions">
        <span className="agent-icon-preview">
          <Avatar name={`Icon of ${props.agent}`} url={icon} />
        </span>
        <label className="agent-icon-url">
          Icon URL{' '}
          <input
            type="url"
            value={typed}
            placeholder={icon?.startsWith('data:') ? 'an image of the photos' : 'https://…'}
            disabled={props.disabled}
            onChange={(event) => props.onChange(event.target.value.trim() || null)}
          />
        </label>
        <button
          type="button"
          aria-expanded={choosing}
          disabled={props.disabled}
          onClick={() => setChoosing((open) => !open)}
        >
          Choose from photos
        </button>
        <button
          type="button"
          disabled={props.disabled || icon === null}
          onClick={() => props.onChange(null)}
        >
          Remove icon
        </button>
      </div>
      {failure ? (
        <p className="error small" role="alert">
          {failure}
        </p>
      ) : null}
      {choosing ? (
        <PhotoChoices client={client} busy={making} onChoose={(photo) => void choose(photo)} />
      ) : null}
    </div>
  );
}

function PhotoChoices(props: {
  client: ParleyClient;
  busy: boolean;
  onChoose: (photo: PhotoInfo) => void;
}) {
  const { client } = props;
  const [photos, setPhotos] = useState<PhotoInfo[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [failure, setFailure] = useState<string | null>(null);

  const load = useCallback(
    async (from: string | null) => {
      setLoading(true);
      setFailure(null);
      try {
        const page = await client.listPhotos({ limit: photoPage, cursor: from });
        setPhotos((shown) => (from === null ? page.items : [...shown, ...page.items]));
        setCursor(page.next_cursor);
      } catch (problem) {
        setFailure(explainRequestError(problem));
      } finally {
        setLoading(false);
      }
    },
    [client],
  );

  useEffect(() => {
    void load(null);
  }, [load]);

  return (
    <div className="icon-choices">
      {failure ? (
        <p className="error small" role="alert">
          {failure}
        </p>
      ) : null}
      {!loading && photos.length === 0 && !failure ? (
        <p className="small muted">No photos yet: images uploaded or made land in Photos.</p>
      ) : null}
      <ul aria-label="Photos to choose from" aria-busy={loading || props.busy}>
        {photos.map((photo) => (
          <li key={photo.photo_id}>
            <button
              type="button"
              disabled={props.busy}
              aria-label={`Use ${nameOf(photo)}`}
              data-photo-id={photo.photo_id}
              onClick={() => props.onChoose(photo)}
            >
              <PhotoThumbnail client={client} photo={photo} />
            </button>
          </li>
        ))}
      </ul>
      {cursor ? (
        <button type="button" disabled={loading} onClick={() => void load(cursor)}>
          More photos
        </button>
      ) : null}
    </div>
  );
}

function PhotoThumbnail(props: { client: ParleyClient; photo: PhotoInfo }) {
  const url = usePhotoUrl(props.client, props.photo.photo_id);
  return url ? (
    <img src={url} alt="" />
  ) : (
    <span className="thumbnail-placeholder" aria-hidden="true" />
  );
}
