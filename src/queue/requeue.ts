// Moving an active job back to wait on behalf of a holder that no longer has it: a process proven dead
// (src/downloads/reclaim.ts), or an activation that never reached its worker (worker-host.ts). How the job's
// lock is read is the engine's (src/queue/backend.ts#requeueActive).
import type { Job, Queue } from "bullmq";
import type { QueueBackend } from "./backend.ts";

/** A queue's active jobs as read once: who runs them, and the move that takes back those of one (dead) holder. */
export type ActiveJobs = { holders: string[]; requeueOf(holder: string): Promise<number> };

export async function activeJobs(backend: QueueBackend, queue: Queue): Promise<ActiveJobs> {
  const active = await queue.getActive();
  return {
    holders: active.flatMap((j) => (j.processedBy ? [j.processedBy] : [])),
    async requeueOf(holder) {
      let moved = 0;
      for (const job of active) if (job.processedBy === holder && (await requeueActiveJob(backend, queue, job, holder))) moved++;
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
export function requeueActiveJob(backend: QueueBackend, queue: Queue, job: Job, holder: string): Promise<boolean> {
  return backend.requeueActive(queue, job, holder);
}
