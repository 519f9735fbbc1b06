import type { InputKind } from '../client/index.js';

/**
 * An AI SDK approval id carries what a PROTOCOL.md §4 answer needs, so an approval can be
 * answered after a reload without any state kept in the page: the request, the sequence
 * of its `input_required` event, its kind, the turn it belongs to, and (approvals) the
 * digest of the arguments shown, which the answer names.
 */
export interface ApprovalRef {
  requestId: string;
  expectedSequence: number;
  kind: InputKind;
  turnId: string;
  argumentsDigest?: string | undefined;
}

const kinds = {
  a: 'approval',
  q: 'question',
  b: 'budget_extension',
  r: 'reconciliation',
  x: 'external_auth',
  c: 'client_tool',
} as const;
const letters = {
  approval: 'a',
  question: 'q',
  budget_extension: 'b',
  reconciliation: 'r',
  external_auth: 'x',
  client_tool: 'c',
} as const;

// `~` never occurs in a request id (req_ + ULID) nor in a turn id ([A-Za-z0-9_-]).
export function encodeApprovalId(ref: ApprovalRef): string {
  return [
    ref.requestId,
    ref.expectedSequence,
    letters[ref.kind],
    ref.turnId,
    ...(ref.argumentsDigest === undefined ? [] : [ref.argumentsDigest]),
  ].join('~');
}

export function decodeApprovalId(id: string): ApprovalRef | null {
  const [requestId, sequence, kind, turnId, digest, ...rest] = id.split('~');
  if (!requestId || !sequence || !kind || !turnId || rest.length > 0) return null;
  if (digest !== undefined && !/^[0-9a-f]{64}$/.test(digest)) return null;
  const expectedSequence = Number(sequence);
  const decodedKind = kinds[kind as keyof typeof kinds];
  if (!Number.isSafeInteger(expectedSequence) || !decodedKind) return null;
  return {
    requestId,
    expectedSequence,
    kind: decodedKind,
    turnId,
    ...(digest === undefined ? {} : { argumentsDigest: digest }),
  };
}
