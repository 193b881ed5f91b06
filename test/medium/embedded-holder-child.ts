// A process holding a lease on the embedded server, for test/medium/embedded-server.test.ts: attaches (starting
// the server if it is not running), prints one JSON line (pid, port, what the attach did), then follows its
// stdin: "release" gives the lease up, "exit" ends the process while holding it (its exit hook gives it up).
// Run as: node --import tsx test/medium/embedded-holder-child.ts (DVAULT_DATA_DIR in the environment).
import readline from "node:readline";
import { attachEmbedded } from "../../src/db/embedded/attach.ts";

const attached = await attachEmbedded({ dataDir: process.env.DVAULT_DATA_DIR ?? "" });
const { port, initialized, started, databaseCreated } = attached;
process.stdout.write(`${JSON.stringify({ pid: process.pid, port, initialized, started, databaseCreated })}\n`);
for await (const line of readline.createInterface({ input: process.stdin })) {
  if (line === "release") {
    attached.release();
    process.stdout.write("released\n");
  }
  if (line === "exit") process.exit(0);
}
