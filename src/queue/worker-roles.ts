// What a worker host does, by role (DVAULT_WORKER_ROLES): which queues it takes jobs from and which start-up and
// periodic duties it owns, so that hosts on several machines split the work without doing any of it twice
// (README.md#running-on-several-machines, docs/ARCHITECTURE.md#worker-roles).
import { DEFAULT_WORKER_ROLES, type WorkerRole } from "../config/worker-roles.ts";
import type { QueueName } from "./queues.ts";

export type { WorkerRole } from "../config/worker-roles.ts";

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
