// A free TCP port on loopback: the kernel picks it, and it is closed again before the caller binds it
// (the demo's OAuth redirect listener, tests' private servers).
import net from "node:net";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
