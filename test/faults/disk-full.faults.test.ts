// A nearly full disk: after a full sync the downloads pause (nothing transferred, no partial file, no row
// failed, and `dvault status` says why), then resume when space returns, and the archive converges with every
// sha256 matching (the suite's closing check). Two ways to fill the disk:
// - a real small filesystem (a 16 MiB tmpfs holding the archive, filled by another file), where this
//   machine lets the test mount one (root in a container that allows it); skipped elsewhere;
// - everywhere: the free-space threshold (DVAULT_MIN_FREE_BYTES) set above the disk's current free space,
//   then lowered again.
import { execFileSync } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { setDownloadTuning, type DownloadDeps } from "../../src/downloads/deps.ts";
import { runDownloadsOnce } from "../../src/downloads/run-once.ts";
import { createLogger } from "../../src/log.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { collectStatus } from "../../src/status/collect.ts";
import { PARTIAL_DIR } from "../../src/storage/layout.ts";
import { testConfig } from "../helpers/config.ts";
import { checkMirror } from "./check.ts";
import { createFaultHarness, downloadUntilConverged, FAULT_LOCK_TTL_MS, syncUntilConverged, type FaultHarness } from "./harness.ts";
import { downloadsPausedKey } from "../../src/coord/downloads-pause.ts";

const MiB = 1024 * 1024;
const log = createLogger({ level: "silent" });

const mountPoint = path.join(os.tmpdir(), `dvault-faults-tmpfs-${process.pid}`);
let mounted = false;
try {
  execFileSync("mkdir", ["-p", mountPoint]);
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", mountPoint], { stdio: "ignore" });
  mounted = true;
} catch {
  mounted = false;
}

const harnesses: FaultHarness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.close();
  if (mounted) execFileSync("umount", ["-l", mountPoint]);
  await fs.rm(mountPoint, { recursive: true, force: true });
});

/** Deps whose archive (and guard) use `env` on top of the harness's: another threshold or archive directory. */
function depsWith(h: FaultHarness, env: Record<string, string>): { deps: DownloadDeps; h: FaultHarness } {
  const config = testConfig({ ...h.env, ...env });
  const services = { ...h.services, config };
  const deps = setDownloadTuning(services, { lockTtlMs: FAULT_LOCK_TTL_MS });
  return { deps, h: { ...h, services, deps, archiveDir: config.archiveDir, env: { ...h.env, ...env } } };
}

/** Downloads paused: nothing stored or failed, no partial file, and the status names the reason. */
async function expectPaused(h: FaultHarness, deps: DownloadDeps): Promise<void> {
  const summary = await runDownloadsOnce({ services: deps.services, deps, log, progressEveryMs: 60_000, retryDelayMs: 5, attempts: 5, busyWaitMs: 10_000 });
  expect(summary.paused?.reason).toMatch(/^downloads paused: disk almost full/);
  expect(summary).toMatchObject({ done: 0, failed: 0 });
  const { rows } = await h.pool.query<{ status: string; n: number }>(
    "SELECT status::text AS status, count(*)::int AS n FROM downloads GROUP BY status ORDER BY status",
  );
  expect(rows.map((r) => r.status)).toEqual(["wanted"]);
  expect(rows[0]!.n).toBeGreaterThan(5);
  expect(await fs.readdir(path.join(deps.archive.root, PARTIAL_DIR)).catch(() => [])).toEqual([]);
  const files = await fs.readdir(path.join(deps.archive.root, "originals"), { recursive: true }).catch(() => [] as string[]);
  expect(files.filter((f) => /\.[a-z0-9]+$/i.test(String(f)))).toEqual([]);
  const queues = new QueueAdmin(h.services.queues);
  try {
    const status = await collectStatus({ ...deps.services, queues });
    expect(status.downloads.paused).toBe(true);
    expect(status.downloads.pausedReason).toMatch(/disk almost full/);
  } finally {
    await queues.close();
  }
}

describe("a nearly full disk", () => {
  it("threshold above the free space: downloads pause, then resume when it is lowered, and the archive converges", async () => {
    const h = await createFaultHarness({ sim: { seed: 12 } });
    harnesses.push(h);
    await syncUntilConverged({ services: h.services, accountId: h.account.id, sources: h.sourceMap });
    const free = await h.deps.archive.freeBytes();
    const full = depsWith(h, { DVAULT_MIN_FREE_BYTES: String(free + 1024 * MiB) });
    await expectPaused(h, full.deps);
    // A second run stays paused (the flag holds until space returns).
    await expectPaused(h, full.deps);

    // Space is back: the threshold lowered to what the harness uses.
    const back = depsWith(h, { DVAULT_MIN_FREE_BYTES: "0" });
    await downloadUntilConverged({ services: back.h.services, deps: back.deps, rounds: 3 });
    expect(await h.services.coord.exists(downloadsPausedKey(h.redis.prefix))).toBe(false);
    const checked = await checkMirror(back.h);
    expect(checked.files).toBeGreaterThan(5);
  }, 60_000);

  it.skipIf(!mounted)(
    "a small filesystem filled by another file: downloads pause, then resume when it is deleted",
    async () => {
      const h = await createFaultHarness({ sim: { seed: 13 } });
      harnesses.push(h);
      const archiveDir = path.join(mountPoint, "archive");
      await syncUntilConverged({ services: h.services, accountId: h.account.id, sources: h.sourceMap });
      const small = depsWith(h, { DVAULT_ARCHIVE_DIR: archiveDir, DVAULT_MIN_FREE_BYTES: String(4 * MiB) });
      const filler = path.join(mountPoint, "filler");
      await fs.writeFile(filler, Buffer.alloc((await small.deps.archive.freeBytes()) - 2 * MiB));
      await expectPaused(h, small.deps);

      await fs.rm(filler);
      await downloadUntilConverged({ services: small.h.services, deps: small.deps, rounds: 3 });
      const checked = await checkMirror(small.h);
      expect(checked.files).toBeGreaterThan(5);
    },
    60_000,
  );
});
