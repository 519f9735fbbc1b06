import { createPublicKey, verify } from 'node:crypto';
import { header, sameSecret, type Headers } from './secrets.js';

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo: Discord gives the bare 32 bytes. */
const ed25519Prefix = Buffer.from('302a300506032b6570032100', 'hex');

/**
 * Discord: an interaction carries an Ed25519 signature of `{timestamp}{raw body}` by the
 * application's key; a Gateway event forwarded by Parley's own listener carries the bot
 * token (`x-discord-gateway-token`), the SDK's forwarding convention.
 */
export function verifyDiscord(
  publicKeyHex: string,
  botToken: string,
  headers: Headers,
  raw: Buffer,
): boolean {
  const forwarded = header(headers, 'x-discord-gateway-token');
  if (forwarded !== null) return sameSecret(forwarded, botToken);
  const signature = header(headers, 'x-signature-ed25519');
  const timestamp = header(headers, 'x-signature-timestamp');
  if (!signature || !timestamp || !/^[0-9a-fA-F]{128}$/.test(signature)) return false;
  try {
    const key = createPublicKey({
      key: Buffer.concat([ed25519Prefix, Buffer.from(publicKeyHex, 'hex')]),
      format: 'der',
      type: 'spki',
    });
    return verify(
      null,
      Buffer.concat([Buffer.from(timestamp), raw]),
      key,
      Buffer.from(signature, 'hex'),
    );
  } catch {
    return false;
  }
}
