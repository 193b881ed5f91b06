// The roles a worker process may run (DVAULT_WORKER_ROLES), as config reads them; what each role does is
// src/queue/worker-roles.ts (README.md#running-on-several-machines).

export const WORKER_ROLES = ["sync", "downloads", "digest", "maintenance", "http"] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];

/**
 * The roles of a worker started without DVAULT_WORKER_ROLES: every role that takes jobs. The dashboard (`http`)
 * opens a port, so it stays something asked for (the role, or `dvault worker --http`), as it was before roles.
 */
export const DEFAULT_WORKER_ROLES: readonly WorkerRole[] = ["sync", "downloads", "digest", "maintenance"];

/** ["http", "sync"] → ["sync", "http"] (in the order of WORKER_ROLES); the unknown names, for a one-line error. */
export function parseWorkerRoles(names: readonly string[]): { roles: WorkerRole[]; unknown: string[] } {
  const known = new Set<string>(WORKER_ROLES);
  return {
    roles: WORKER_ROLES.filter((role) => names.includes(role)),
    unknown: names.filter((name) => !known.has(name)),
  };
}
