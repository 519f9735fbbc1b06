import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ParleyError } from '../errors.js';
import type { ApiDeps } from './deps.js';

/**
 * The built web app (`npm run build` writes it to dist/web), served by the API process
 * itself at `/`: one server, one origin, so the app needs no CORS and its key never
 * leaves the page. Resolved from this module, which lives in src/api (tests) or dist/api
 * (the package): both are two levels below the package root.
 */
export const defaultWebDir = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'dist',
  'web',
);

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/**
 * Paths that belong to an API — Parley's own, and the bases where clients of other
 * protocols look (OpenAI's `/v1`, `/openai`, `/mcp`, `/a2a`, `/ag-ui`): never answered
 * with the app's index.html, so a client pointed at a wrong URL gets a coded 404 rather
 * than a page it would read as an empty answer.
 */
const reservedRoots = [
  '/api',
  '/healthz',
  '/readyz',
  '/metrics',
  '/v1',
  '/openai',
  '/mcp',
  '/a2a',
  '/ag-ui',
];

const underReservedRoot = (path: string) =>
  reservedRoots.some((root) => path === root || path.startsWith(`${root}/`));

/** A client that asks for JSON and not for a page is an API client, not a browser. */
const wantsJsonOnly = (accept: string) =>
  /\bapplication\/json\b/i.test(accept) && !/\btext\/html\b/i.test(accept);

// The app loads only its own scripts and styles, and talks only to this origin. Images and
// audio it fetched itself (an attachment, a reply's speech) play from blob: URLs.
const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

export function webRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const root = deps.webDir ?? defaultWebDir;
  const handler = (request: FastifyRequest, reply: FastifyReply) => serveWeb(root, request, reply);
  app.get('/', { config: { public: true } }, handler);
  app.get('/*', { config: { public: true } }, handler);
}

async function serveWeb(root: string, request: FastifyRequest, reply: FastifyReply) {
  const path = decodePath(request.url);
  if (path === null || underReservedRoot(path)) {
    throw new ParleyError('not_found', 'no such endpoint');
  }
  const asset = path !== '/' ? await findFile(root, path) : null;
  if (asset) {
    // Vite names assets after their content hash: a changed file is a new URL.
    const immutable = path.startsWith('/assets/');
    return sendFile(request, reply, asset, immutable);
  }
  if (wantsJsonOnly(String(request.headers.accept ?? ''))) {
    throw new ParleyError('not_found', 'no such endpoint');
  }
  // Client-side routes (/s/ID, /inbox) get the app; a missing file with an extension
  // is a real 404, so a broken asset link does not come back as HTML.
  if (extname(path) !== '' && path !== '/') {
    throw new ParleyError('not_found', 'no such file');
  }
  const index = await findFile(root, '/index.html');
  if (!index) {
    throw new ParleyError('not_found', 'the web app is not built: run `npm run build`');
  }
  return sendFile(request, reply, index, false);
}

function decodePath(url: string): string | null {
  const raw = url.split('?')[0] ?? '/';
  try {
    const path = decodeURIComponent(raw);
    return path.includes('\0') ? null : path;
  } catch {
    return null;
  }
}

/** A regular file under `root`, or null; `..` can never climb out of it. */
async function findFile(root: string, path: string): Promise<string | null> {
  const file = resolve(join(root, path));
  if (file !== root && !file.startsWith(root + sep)) return null;
  try {
    return (await stat(file)).isFile() ? file : null;
  } catch {
    return null;
  }
}

async function sendFile(
  request: FastifyRequest,
  reply: FastifyReply,
  file: string,
  immutable: boolean,
) {
  const type = contentTypes[extname(file)] ?? 'application/octet-stream';
  void reply
    .header('content-type', type)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
    .header('vary', 'accept-encoding');
  if (type.startsWith('text/html'))
    void reply.header('content-security-policy', contentSecurityPolicy);
  // The build writes a gzipped twin of every text file: no compression at request time.
  const accepts = String(request.headers['accept-encoding'] ?? '');
  if (/\bgzip\b/.test(accepts)) {
    const gzipped = await stat(`${file}.gz`).then(
      (found) => found.isFile(),
      () => false,
    );
    if (gzipped) {
      void reply.header('content-encoding', 'gzip');
      return reply.send(createReadStream(`${file}.gz`));
    }
  }
  return reply.send(createReadStream(file));
}
