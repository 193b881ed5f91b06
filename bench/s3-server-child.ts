// The S3 test server (test/helpers/s3-server.ts) in a process of its own, for benches: in the bench's process
// s3rver's work (hashing and writing every object) would share one event loop with the worker it measures,
// where a real bucket is a server elsewhere. Prints the server as one JSON line, stops on SIGTERM.
// Run as: node --import tsx bench/s3-server-child.ts <bucket>
import { startS3Server } from "../test/helpers/s3-server.ts";

const server = await startS3Server({ bucket: process.argv[2] ?? "dvault-bench" });
process.stdout.write(`${JSON.stringify({ endpoint: server.endpoint, bucket: server.bucket, dir: server.dir, env: server.env })}\n`);
process.once("SIGTERM", () => {
  void server.close().then(() => process.exit(0));
});
