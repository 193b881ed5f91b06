// A key file restored over a wrong one while a process runs (a worker whose config folder was mixed up, then put
// right): the next API access reads the tokens with the key now on disk, as status and the runs' checks already do
// (src/crypto/install-key.ts), without a restart, and the account stays logged in.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, it } from "vitest";
import { whoami } from "../../src/api/account-calls.ts";
import { createLogger } from "../../src/log.ts";
import { createServices } from "../../src/services.ts";
import { testConfig } from "../helpers/config.ts";
import { createDownloadHarness } from "../helpers/download-harness.ts";

it("a key file put right while the process runs is the one its next API access reads the tokens with; one lost is never made anew", async () => {
  const h = await createDownloadHarness({ sim: { dataset: { deviations: 2, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 } } });
  const configDir = mkdtempSync(path.join(os.tmpdir(), "dvault-key-restored-"));
  const keyFile = path.join(configDir, "secret.key");
  const { DVAULT_SECRET_KEY: _key, ...env } = h.env;
  const services = await createServices({ config: testConfig({ ...env, DVAULT_CONFIG_DIR: configDir }), log: createLogger({ level: "silent" }) });
  try {
    writeFileSync(keyFile, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
    // The worker's token refresh opens the token manager while the key on disk is the wrong one.
    services.tokens();
    await expect(services.apiFor(h.account.id)).rejects.toThrow(/encrypted with another key/);
    writeFileSync(keyFile, `${h.keyHex}\n`, { mode: 0o600 });
    const api = await services.apiFor(h.account.id);
    expect((await whoami(api.transport)).username).toBe(h.sim.truth.users.get(h.sim.truth.ownerId)?.username);
    const state = await h.pool.query<{ state: string }>("SELECT state::text FROM accounts WHERE id = $1", [h.account.id]);
    expect(state.rows).toEqual([{ state: "ok" }]);
    // The key file lost while it runs: the token manager makes none in its place (only a first build may make one).
    rmSync(keyFile);
    services.tokens();
    await expect(services.apiFor(h.account.id)).rejects.toThrow(/no key was found/);
    expect(existsSync(keyFile)).toBe(false);
  } finally {
    await services.close();
    rmSync(configDir, { recursive: true, force: true });
    await h.close();
  }
}, 60_000);
