// A TCP proxy in front of a server that can be taken away and brought back on the same port: `down()` drops every
// connection and stops listening, so a client's next connect is refused (ECONNREFUSED), as when PostgreSQL or Redis
// is stopped; `up()` listens again.
import net from "node:net";

export type OutageProxy = {
  /** `url` with the proxy's host and port. */
  url: string;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
};

export async function startOutageProxy(url: string): Promise<OutageProxy> {
  const target = new URL(url);
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  };
  const onConnection = (client: net.Socket) => {
    const upstream = net.connect({ host: target.hostname, port: Number(target.port) });
    for (const s of [client, upstream]) {
      track(s);
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  };
  let server = net.createServer(onConnection);
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port));
    });
  const port = await listen(0);
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  const proxied = new URL(url);
  proxied.hostname = "127.0.0.1";
  proxied.port = String(port);
  return {
    url: proxied.toString(),
    down: stop,
    async up() {
      server = net.createServer(onConnection);
      await listen(port);
    },
    close: async () => {
      if (server.listening) await stop();
    },
  };
}
