// `sync` and `download` without --once hand work to the worker's queues: when nothing takes from the queue, the
// person is told the work waits. A worker is seen by its heartbeat (src/worker.ts, read by
// src/status/redis-state.ts) or by a BullMQ worker connected to the queue (any process hosting the handlers).
import { QueueAdmin } from "../queue/queue-admin.ts";
import type { QueueName } from "../queue/queues.ts";
import type { Services } from "../services.ts";
import { workerHeartbeats } from "../status/redis-state.ts";

/** A line to print when no worker takes from `queue`; undefined when one does (or Redis can't tell). */
export async function noWorkerNote(services: Pick<Services, "coord" | "config" | "queues">, queue: QueueName): Promise<string | undefined> {
  const queues = new QueueAdmin(services.queues);
  try {
    const beats = await workerHeartbeats(services.coord, services.config.redisPrefix, Date.now());
    if (beats.length > 0 || (await queues.workerCount(queue)) > 0) return undefined;
  } catch {
    return undefined;
  } finally {
    await queues.close();
  }
  return "no worker is running: the queued work waits until one starts (dvault worker), or run the command with --once";
}
