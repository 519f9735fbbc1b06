import { ParleyError } from '../errors.js';
import { newAttachmentId, newPhotoId } from '../ids.js';
import type { AdmitTurnInput } from './admitTurn.js';
import { createAttachment } from './createAttachment.js';
import { currentDefinitionRevision } from './currentDefinitionRevision.js';
import type { Queryable } from './db.js';
import { insertPhoto } from './photos.js';

// What an admission checks (and stores) inside its transaction beyond the turn itself: a
// pressed option, the agent revision the client read, the attachments it names, the
// images it carries inline.

/**
 * Applies a pressed option: the offer must exist in this session, the value must be one
 * of its choices, and the offer must not be locked yet. The first press locks it.
 */
export async function lockOption(
  tx: Queryable,
  input: AdmitTurnInput,
  sessionId: string,
): Promise<void> {
  const option = input.option as { request_id: string; value: string };
  const offer = (
    await tx.query<{ choices: string[]; locked: boolean }>(
      `select choices, locked_at is not null as locked from option_offers
        where tenant = $1 and session_id = $2 and request_id = $3 for update`,
      [input.tenant, sessionId, option.request_id],
    )
  ).rows[0];
  if (!offer) throw new ParleyError('option_not_found', 'no such option request in this session');
  if (offer.locked)
    throw new ParleyError('option_locked', 'an option was already chosen for this request');
  if (!offer.choices.includes(option.value)) {
    throw new ParleyError('invalid_option', 'option.value: not one of the offered choices', {
      choices: offer.choices,
    });
  }
  await tx.query(
    `update option_offers set chosen_value = $2, chosen_turn_id = $3, locked_at = now()
      where request_id = $1`,
    [option.request_id, option.value, input.turnId],
  );
}

/**
 * A named `agent_revision` must be the revision of the session's agent the tenant sees
 * now: a client that read the definition gets a turn of exactly that definition, or a 409
 * that names the current revision (an edit landed since it looked).
 */
export async function checkAgentRevision(
  tx: Queryable,
  input: AdmitTurnInput,
  agent: string,
): Promise<void> {
  const current = await currentDefinitionRevision(tx, {
    kind: 'agent',
    tenant: input.tenant,
    name: agent,
  });
  if (current !== input.agentRevision) {
    throw new ParleyError(
      'agent_revision_mismatch',
      `agent_revision: the agent "${agent}" is at revision ${current ?? 'none'}`,
      { agent, agent_revision: current },
    );
  }
}

/** Every attachment a turn names must be an image of this very session (else 404). */
export async function checkAttachments(
  tx: Queryable,
  input: AdmitTurnInput,
  sessionId: string,
): Promise<void> {
  const wanted = [...new Set(input.attachments)];
  const found = await tx.query(
    `select 1 from attachments
      where tenant = $1 and session_id = $2 and attachment_id = any($3::text[])`,
    [input.tenant, sessionId, wanted],
  );
  if (found.rowCount !== wanted.length) {
    throw new ParleyError('attachment_not_found', 'no such attachment in this session');
  }
}

/**
 * Stores the turn's inline images as attachments of its session, with `imagesInLibrary`
 * each also in its author's photo library (as an upload through the attachments route
 * is); their ids, in order.
 */
export async function storeImages(
  tx: Queryable,
  input: AdmitTurnInput,
  sessionId: string,
): Promise<string[]> {
  const ids: string[] = [];
  for (const image of input.images ?? []) {
    const stored = await createAttachment(tx, {
      attachmentId: newAttachmentId(),
      tenant: input.tenant,
      sessionId,
      mediaType: image.mediaType,
      data: image.data,
      uploadedBy: input.author,
    });
    if (!stored) throw new ParleyError('session_not_found', 'no such session');
    if (input.imagesInLibrary === true) {
      await insertPhoto(tx, {
        photoId: newPhotoId(),
        tenant: input.tenant,
        owner: input.author,
        origin: 'upload',
        title: null,
        source: { session_id: sessionId, attachment_id: stored.attachment_id },
        mediaType: image.mediaType,
        bytes: image.data,
      });
    }
    ids.push(stored.attachment_id);
  }
  return ids;
}
