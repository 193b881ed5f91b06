// Moving an active job back to wait on behalf of a holder that no longer has it: a process proven dead
// (src/downloads/reclaim.ts), or an activation that never reached its worker (worker-host.ts).
import { randomBytes } from "node:crypto";
import type { Job, Queue } from "bullmq";
import type { Redis } from "ioredis";

/** A queue's active jobs as read once: who runs them, and the move that takes back those of one (dead) holder. */
export type ActiveJobs = { holders: string[]; requeueOf(holder: string): Promise<number> };

export async function activeJobs(redis: Redis, queue: Queue): Promise<ActiveJobs> {
  const active = await queue.getActive();
  return {
    holders: active.flatMap((j) => (j.processedBy ? [j.processedBy] : [])),
    async requeueOf(holder) {
      let moved = 0;
      for (const job of active) if (job.processedBy === holder && (await requeueActiveJob(redis, queue, job, holder))) moved++;
      return moved;
    },
  };
}

/**
 * Moves `job` (as read from the active list) back to the queue, due at once and no attempt spent, if it is
 * still that activation by `holder`: its `processedBy`, activation time and lock are read together, and
 * BullMQ's move checks the lock token and that the job is still active, so a job activated again
 * meanwhile is never taken from whoever has it now. (A move to delayed rather than to wait, because that
 * one also wakes the workers blocked on the queue.)
 */
export async function requeueActiveJob(redis: Redis, queue: Queue, job: Job, holder: string): Promise<boolean> {
  const jobKey = queue.toKey(job.id ?? "");
  const lockKey = `${jobKey}:lock`;
  const reply = (await redis.multi().hget(jobKey, "pb").hget(jobKey, "processedOn").get(lockKey).exec()) ?? [];
  const [pb, processedOn, lock] = reply.map(([, v]) => v as string | null);
  if (pb !== holder || Number(processedOn) !== job.processedOn) return false;
  let token = lock;
  if (token === null) {
    // Its lock already lapsed: take one (an activation meanwhile overwrites it, and the move fails).
    token = `requeue:${randomBytes(8).toString("hex")}`;
    if ((await redis.set(lockKey, token, "PX", 10_000, "NX")) !== "OK") return false;
  }
  try {
    await job.moveToDelayed(Date.now(), token);
    return true;
  } catch {
    return false;
  }
}
