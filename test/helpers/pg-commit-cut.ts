// A TCP proxy in front of PostgreSQL that loses the answer to a commit: once armed, the next statement whose text
// holds a marker runs on the server and commits (the server sends ReadyForQuery only after its implicit transaction
// committed), and the client's connection is then dropped before any of that answer reaches it. The client sees
// "Connection terminated unexpectedly" for a write that is in the database: a commit whose outcome it cannot know
// (docs/RELIABILITY.md#grouped-durability).
import net from "node:net";

export type CommitCutProxy = {
  /** A DATABASE_URL for `url`'s database through the proxy. */
  url: string;
  /** The next statement containing `marker` (on any connection) commits and its answer is lost. */
  cutNext(marker: string): void;
  /** Answers lost so far. */
  readonly cuts: number;
  close(): Promise<void>;
};

/** ReadyForQuery, the server's last message for a statement (after its commit). */
const READY_FOR_QUERY = 0x5a;

export async function startCommitCutProxy(url: string): Promise<CommitCutProxy> {
  const target = new URL(url);
  let marker: string | undefined;
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: target.hostname, port: Number(target.port || 5432) });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    let tail = "";
    let cutting = false;
    let held = Buffer.alloc(0);
    client.on("data", (chunk: Buffer) => {
      // The marker may straddle two chunks: a short tail of the last one is searched with each.
      const text = tail + chunk.toString("latin1");
      tail = text.slice(-64);
      if (marker !== undefined && text.includes(marker)) {
        marker = undefined;
        cutting = true;
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (!cutting) {
        client.write(chunk);
        return;
      }
      // The answer to the marked statement, held back message by message (type byte, then a length that counts
      // itself) until its ReadyForQuery: then the connection goes, and the client never reads any of it.
      held = Buffer.concat([held, chunk]);
      let at = 0;
      while (held.length - at >= 5) {
        const type = held[at];
        const length = held.readInt32BE(at + 1);
        if (held.length - at < 1 + length) break;
        if (type === READY_FOR_QUERY) {
          cuts++;
          client.destroy();
          upstream.destroy();
          return;
        }
        at += 1 + length;
      }
    });
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const through = new URL(url);
  through.hostname = "127.0.0.1";
  through.port = String((server.address() as net.AddressInfo).port);
  return {
    url: through.toString(),
    cutNext(m) {
      marker = m;
    },
    get cuts() {
      return cuts;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
