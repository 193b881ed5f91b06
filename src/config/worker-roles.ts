// The roles a worker process may run (DVAULT_WORKER_ROLES) and its sync concurrency: the fragment of the
// environment schema src/config.ts merges in. What each role does is src/queue/worker-roles.ts
// (README.md#running-on-several-machines).
import { z } from "zod";
import { emptyAsUndefined, wholeNumber } from "./fields.ts";

export const WORKER_ROLES = ["sync", "downloads", "digest", "maintenance", "http"] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];

/**
 * The roles of a worker started without DVAULT_WORKER_ROLES: every role that takes jobs. The dashboard (`http`)
 * opens a port, so it stays something asked for (the role, or `dvault worker --http`), as it was before roles.
 */
export const DEFAULT_WORKER_ROLES: readonly WorkerRole[] = ["sync", "downloads", "digest", "maintenance"];

/** "http, Sync" → ["sync", "http"] (in the order of WORKER_ROLES); the unknown names, for a one-line error. */
export function parseWorkerRoles(raw: string): { roles: WorkerRole[]; unknown: string[] } {
  const names = [
    ...new Set(
      raw
        .split(",")
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
  const known = new Set<string>(WORKER_ROLES);
  return {
    roles: WORKER_ROLES.filter((role) => names.includes(role)),
    unknown: names.filter((name) => !known.has(name)),
  };
}

export const WORKER_ENV = {
  DVAULT_WORKER_ROLES: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .superRefine((v, ctx) => {
        const { roles, unknown } = parseWorkerRoles(v);
        if (unknown.length === 0 && roles.length > 0) return;
        const what = unknown.length ? `has no role ${unknown.map((u) => JSON.stringify(u)).join(", ")}: it ` : "";
        ctx.addIssue({ code: "custom", message: `${what}expects a comma-separated list of ${WORKER_ROLES.join(", ")}` });
      })
      .optional(),
  ),
  DVAULT_SYNC_CONCURRENCY: wholeNumber(1, 16, "expects 1 to 16 sources synced at once", 2),
};

/** The roles DVAULT_WORKER_ROLES names (already checked by WORKER_ENV), or the default when it is unset. */
export function workerRolesFrom(raw: string | undefined): readonly WorkerRole[] {
  return raw === undefined ? DEFAULT_WORKER_ROLES : parseWorkerRoles(raw).roles;
}
