// The worker's composition root: opens connections, publishes a heartbeat, shuts down gracefully.
import os from "node:os";
import type { Config } from "./config.ts";
import type { Logger } from "./log.ts";
import { createRedis } from "./queue/redis.ts";

export type RunningWorker = {
  id: string;
  untilStopped(): Promise<void>;
  stop(reason: string): Promise<void>;
};

const HEARTBEAT_EVERY_MS = 15_000;
const HEARTBEAT_TTL_S = 60;

export async function startWorker({ config, log }: { config: Config; log: Logger }): Promise<RunningWorker> {
  const id = `${os.hostname()}:${process.pid}`;
  const redis = createRedis(config.redisUrl, "command");
  await redis.connect();
  const heartbeatKey = `${config.redisPrefix}:heartbeat:${id}`;
  const beat = () =>
    redis
      .set(heartbeatKey, JSON.stringify({ id, at: new Date().toISOString() }), "EX", HEARTBEAT_TTL_S)
      .catch((err: unknown) => log.warn({ err }, "heartbeat failed"));
  await beat();
  const timer = setInterval(beat, HEARTBEAT_EVERY_MS);

  let resolveStopped: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  let stopping = false;

  const stop = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ reason }, "worker stopping");
    clearInterval(timer);
    await redis.del(heartbeatKey).catch(() => undefined);
    await redis.quit().catch(() => redis.disconnect());
    log.info("worker stopped");
    resolveStopped();
  };
  // Handlers stay installed: a second Ctrl-C while stopping must not kill the process mid-commit.
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) log.warn({ signal }, "already stopping; waiting for active work to finish");
    void stop(signal);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);

  log.info({ worker: id }, "worker ready");
  return { id, untilStopped: () => stopped, stop };
}
