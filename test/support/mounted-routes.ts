import type { Express } from 'express';

export interface MountedRoute {
  method: string;
  path: string;
}

/**
 * Every route an app answers, read from Express's own router (app.router), so routes any feature
 * adds are walked too. A router mounted under a path would hide its prefix from this walk, so the
 * walk fails on one rather than skip its routes. Dispatchers (api/http/dispatch.ts) name the routers
 * they send to, and the walk follows them.
 */
export function mountedRoutes(app: Express): MountedRoute[] {
  const found: MountedRoute[] = [];
  const walk = (stack: any[]) => {
    for (const layer of stack) {
      if (layer.route) {
        // A route for every method (app.all) is walked with GET.
        const declared = Object.keys(layer.route.methods);
        const methods = declared.includes('_all') || declared.length > 8 ? ['get'] : declared;
        for (const path of [layer.route.path].flat()) for (const method of methods) found.push({ method, path });
      } else if (Array.isArray(layer.handle?.stack)) {
        if (!layer.slash) throw new Error(`a router is mounted under a path (${layer.name}); mount it at the root so this walk sees its routes`);
        walk(layer.handle.stack);
      } else if (Array.isArray(layer.handle?.dispatchesTo)) {
        // api/http/dispatch.ts: a dispatcher at the root that sends each request to one of these routers.
        walk(layer.handle.dispatchesTo.map((handle: unknown) => ({ handle, slash: true })));
      }
    }
  };
  walk((app as any).router.stack);
  return found;
}
