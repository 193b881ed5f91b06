// dvault digest --preview on a machine whose clock is behind the last digest's end (stepped back after the 08:00
// digest, or the host that sent it ran ahead): one line saying so, not an 'unexpected error' blaming a --since that
// was never given.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { previewDigest } from "../../src/digest/preview.ts";
import { UserError } from "../../src/errors.ts";
import { createDigestFixture, type DigestFixture } from "../helpers/digest-fixture.ts";

let f: DigestFixture;
let out: string;

beforeAll(async () => {
  f = await createDigestFixture({ DVAULT_DIGEST_CHANNELS: "file" });
  out = await mkdtemp(path.join(os.tmpdir(), "dvault-preview-clock-"));
});
afterAll(async () => {
  await f?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

describe("digest --preview with the clock behind the last digest", () => {
  it("says the clock is behind and what to give, in one line", async () => {
    // The 08:00 digest went out; the clock then stepped back to 07:50.
    await f.services.pool.query("INSERT INTO digest_state (channel, last_window_end) VALUES ('file', $1)", [new Date("2026-11-03T08:00:00Z")]);
    f.clock.now = Date.parse("2026-11-03T07:50:00Z");
    const preview = previewDigest(f.services, { out });
    await expect(preview).rejects.toBeInstanceOf(UserError);
    await expect(preview).rejects.toThrow(
      /^the last digest's window ends at 2026-11-03T08:00:00.000Z, after this machine's time \(2026-11-03T07:50:00.000Z\): is its clock behind\? Give --since to preview an earlier window$/,
    );
    // An earlier window still previews.
    const earlier = await previewDigest(f.services, { since: new Date("2026-11-02T08:00:00Z"), out });
    expect(earlier.window.end.toISOString()).toBe("2026-11-03T07:50:00.000Z");
  });
});
