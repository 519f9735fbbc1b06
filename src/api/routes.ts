import type { FastifyInstance } from 'fastify';

/** One registered route: its method and its URL as Fastify spells it (`/x/:id`, `/*`). */
export interface RegisteredRoute {
  method: string;
  url: string;
}

const registered = new WeakMap<FastifyInstance, RegisteredRoute[]>();

/**
 * Records every route the app and its plugins register from now on (an `onRoute` hook on
 * the root is inherited by every plugin registered after it), so that the OpenAPI
 * document and the fuzzer can be held to the routes that really exist. HEAD routes that
 * Fastify adds beside each GET are left out: they answer like the GET, without a body.
 */
export function recordRoutes(app: FastifyInstance): void {
  const routes: RegisteredRoute[] = [];
  registered.set(app, routes);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      routes.push({ method, url: route.url ?? route.path });
    }
  });
}

/** The routes `app` registered since `recordRoutes(app)`, in registration order. */
export function registeredRoutes(app: FastifyInstance): RegisteredRoute[] {
  return [...(registered.get(app) ?? [])];
}

/**
 * A route's URL with its parameters' names dropped: `/x/:id` and OpenAPI's `/x/{x_id}`
 * both become `/x/{}`, so the two spellings of one route compare equal.
 */
export function routeShape(url: string): string {
  return url.replace(/:[A-Za-z0-9_]+/g, '{}').replace(/\{[A-Za-z0-9_]+\}/g, '{}');
}
