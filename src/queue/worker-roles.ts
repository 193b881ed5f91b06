// What a worker host does, by role (DVAULT_WORKER_ROLES): which queues it takes jobs from and which start-up and
// periodic duties it owns, so that hosts on several machines split the work without doing any of it twice
// (README.md#running-on-several-machines, docs/ARCHITECTURE.md#worker-roles).
import type { QueueName } from "./queues.ts";

export const WORKER_ROLES = ["sync", "downloads", "digest", "maintenance", "http"] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];

/**
 * The roles of a worker started without DVAULT_WORKER_ROLES: every role that takes jobs. The dashboard (`http`)
 * opens a port, so it stays something asked for (the role, or `dvault worker --http`), as it was before roles.
 */
export const DEFAULT_WORKER_ROLES: readonly WorkerRole[] = ["sync", "downloads", "digest", "maintenance"];

/** Roles a healthy installation needs some live host to run; status warns about each one nobody runs. */
export const JOB_ROLES: readonly WorkerRole[] = DEFAULT_WORKER_ROLES;

/**
 * The queue each role takes jobs from. Jobs are routed to hosts by queue (a BullMQ worker takes any job of its
 * queue), so the maintenance queue's jobs go with it: tokens.refresh, schedules.reconcile, downloads.enqueue
 * (which only hands due rows to the downloads queue), alerts.evaluate and thumbnails.backfill.
 */
const QUEUE_OF_ROLE: Partial<Record<WorkerRole, QueueName>> = {
  sync: "sync",
  downloads: "downloads",
  digest: "digest",
  maintenance: "maintenance",
};

/** The queues a host with `roles` takes jobs from. */
export function queuesOfRoles(roles: readonly WorkerRole[]): QueueName[] {
  return roles.flatMap((role) => QUEUE_OF_ROLE[role] ?? []);
}

/** ["http", "sync"] → ["sync", "http"] (in the order of WORKER_ROLES); the unknown names, for a one-line error. */
export function parseWorkerRoles(names: readonly string[]): { roles: WorkerRole[]; unknown: string[] } {
  const known = new Set<string>(WORKER_ROLES);
  return {
    roles: WORKER_ROLES.filter((role) => names.includes(role)),
    unknown: names.filter((name) => !known.has(name)),
  };
}
