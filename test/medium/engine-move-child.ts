// A `dvault engine migrate` killed midway, for test/medium/engine-migrate-lease.test.ts: moves the install its
// environment names (argv[2], JSON) to argv[3], prints "at <step>" once step argv[4] is done and waits there until
// it is killed; its leases (src/engine/move.ts) outlive their last renewal by argv[5] ms.
// Run as: node --import tsx test/medium/engine-move-child.ts <env json> <engine> <step> <lease ttl ms>
import { engineOpener } from "../../src/cli/engine.ts";
import { moveEngine, parseEngine } from "../../src/engine/move.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { testConfig } from "../helpers/config.ts";

const [env, to, step, ttl] = process.argv.slice(2);
if (!env || !to || !step || !ttl) throw new Error("usage: engine-move-child <env json> <engine> <step> <lease ttl ms>");
const config = testConfig(JSON.parse(env) as Record<string, string>);
await moveEngine({
  config,
  to: parseEngine(to),
  opener: engineOpener(config),
  sources: new Map([[gallerySource.name, gallerySource]]),
  leaseTtlMs: Number(ttl),
  onStep: async (done) => {
    if (done !== step) return;
    process.stdout.write(`at ${done}\n`);
    // Held here, its connections open, until the test kills it.
    setInterval(() => undefined, 60_000);
    await new Promise(() => undefined);
  },
});
