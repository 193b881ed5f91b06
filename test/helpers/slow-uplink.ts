// A TCP relay on loopback whose upload direction (client → server) can be slowed on demand, so that a test can
// catch a process in the middle of sending a file (an S3 upload) rather than after it. Answers pass at full speed.
import net from "node:net";
import { Transform } from "node:stream";
import { setTimeout as pause } from "node:timers/promises";

export type SlowUplink = {
  /** host:port of the relay; use it in place of the target's. */
  url: string;
  /** Caps every connection's upload at this rate (null: full speed); applies to bytes not yet relayed. */
  setBytesPerSecond(bps: number | null): void;
  close(): Promise<void>;
};

/** Relays 127.0.0.1:<new port> to `target` (an http:// URL on loopback). */
export async function startSlowUplink(target: string): Promise<SlowUplink> {
  const to = new URL(target);
  let bps: number | null = null;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(to.port), to.hostname);
    sockets.add(client).add(upstream);
    const throttle = new Transform({
      transform(chunk: Buffer, _enc, done) {
        // A slow link takes time to carry each chunk: the relay holds it for that long.
        const rate = bps;
        if (rate === null) return done(null, chunk);
        pause(Math.ceil((chunk.length / rate) * 1000)).then(() => done(null, chunk), done);
      },
    });
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(throttle).pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `${to.protocol}//127.0.0.1:${port}`,
    setBytesPerSecond(rate) {
      bps = rate && rate > 0 ? rate : null;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
