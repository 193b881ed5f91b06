// The digests' signed thumbnail links over real sockets: a Discord digest rendered and delivered by
// runDigest to a stand-in of Discord carries a signed /thumb/ URL of the dashboard, and that URL loads from a
// dashboard behind DVAULT_HTTP_TOKEN without the token. The signature opens that one size of that one
// picture: a wrong one, one for the other size or another picture, and the original under /files/ all get
// the dashboard's 401. No signature reaches a log line.
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDigest } from "../../src/digest/run-digest.ts";
import { freePort } from "../../src/free-port.ts";
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { signedThumbUrl, thumbLinkKey, thumbSig } from "../../src/storage/thumb-link.ts";
import { createLogger } from "../../src/log.ts";
import { type ArchivedFile, archiveFile, artworkPng } from "../helpers/archive-fixtures.ts";
import { discordProblems, startDiscordStandIn, type StandIn } from "../helpers/channel-stand-ins.ts";
import { createDigestFixture, type DigestFixture } from "../helpers/digest-fixture.ts";
import { DeviationRepository } from "../../src/db/deviation.repository.ts";
import { makeDeviation, uuid } from "../helpers/mirror-fixtures.ts";

const DASHBOARD_TOKEN = "dash-token-thumbs-0123456789";
const KEY = randomBytes(32);
const WEBHOOK = { id: "1234567890123", token: "dIsCoRd-ToKeN_thumbs0123456789" };

let f: DigestFixture;
let discord: StandIn;
let dashboard: RunningDashboard;
let archiveDir: string;
let publicUrl: string;
/** The faved deviation's file (the digest shows it) and another archived picture. */
let shown: ArchivedFile;
let other: ArchivedFile;
/** The thumbnail URL the Discord embed carried. */
let embedThumb: string;
const logLines: string[] = [];

beforeAll(async () => {
  archiveDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-thumb-links-"));
  discord = await startDiscordStandIn(WEBHOOK);
  const port = await freePort();
  publicUrl = `http://localhost:${port}`;
  f = await createDigestFixture({
    DVAULT_DIGEST_CHANNELS: "discord",
    DVAULT_DISCORD_WEBHOOK_URL: `${discord.url}/api/webhooks/${WEBHOOK.id}/${WEBHOOK.token}`,
    DVAULT_PUBLIC_URL: publicUrl,
    DVAULT_SECRET_KEY: KEY.toString("hex"),
    DVAULT_ARCHIVE_DIR: archiveDir,
  });
  // The fave messages are on deviation 1 (test/helpers/mirror-fixtures.ts): its file makes the embed's picture.
  const seen = new Date("2026-11-03T06:00:00Z");
  await new DeviationRepository(f.services.pool).upsertDeviations([makeDeviation({ n: 1 }), makeDeviation({ n: 2 })], seen);
  await f.addFaves(2, seen);
  shown = await archiveFile(f.services.pool, archiveDir, uuid(1), artworkPng(1, 60, 40));
  other = await archiveFile(f.services.pool, archiveDir, uuid(2), artworkPng(2, 50, 50));

  const log = createLogger({ level: "debug", destination: { write: (line: string) => void logLines.push(line) } });
  dashboard = await startDashboard({ ...f.services, log }, { port, token: DASHBOARD_TOKEN });

  const result = await runDigest(
    { channel: "discord", tick: "2026-11-03T08:00:00.000Z", trigger: "cron" },
    { services: f.services, attempt: 1, maxAttempts: 6 },
  );
  expect(result.status).toBe("sent");
  const body = discord.received[0]?.body as { embeds?: Array<{ thumbnail?: { url: string } }> };
  expect(discordProblems(body)).toEqual([]);
  embedThumb = body.embeds?.[0]?.thumbnail?.url ?? "";
}, 60_000);
afterAll(async () => {
  await dashboard?.close();
  await f?.close();
  await discord?.close();
  if (archiveDir) await fs.rm(archiveDir, { recursive: true, force: true });
});

const sigOf = (url: string) => new URL(url).searchParams.get("sig") ?? "";
const get = (url: string, headers: Record<string, string> = {}) => fetch(url, { headers: { accept: "image/*", ...headers } });

describe("signed thumbnail links", () => {
  it("the Discord embed of a real digest links the shown picture's thumbnail, signed, and it loads without the dashboard's token", async () => {
    expect(embedThumb).toMatch(new RegExp(`^${publicUrl}/thumb/s/${shown.sha256}\\.webp\\?sig=[A-Za-z0-9_-]{22}$`));
    expect(embedThumb).toBe(signedThumbUrl(publicUrl, thumbLinkKey(KEY), "s", shown.sha256));
    // The dashboard does need its token: the same picture without the signature is refused.
    expect((await get(`${publicUrl}/thumb/s/${shown.sha256}.webp`)).status).toBe(401);
    const res = await get(embedThumb);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/webp");
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.subarray(8, 12).toString("ascii")).toBe("WEBP");
  });

  it("opens nothing but that one size of that one picture", async () => {
    const sig = sigOf(embedThumb);
    const flipped = `${sig.slice(0, -1)}${sig.endsWith("A") ? "B" : "A"}`;
    const refused = [
      `${publicUrl}/thumb/s/${shown.sha256}.webp?sig=${flipped}`,
      `${publicUrl}/thumb/s/${shown.sha256}.webp?sig=`,
      // The signature of the small size does not open the large one, nor another picture's small one.
      `${publicUrl}/thumb/m/${shown.sha256}.webp?sig=${sig}`,
      `${publicUrl}/thumb/s/${other.sha256}.webp?sig=${sig}`,
      // Nor the original, nor any page.
      `${publicUrl}/files/${shown.downloadId}?sig=${sig}`,
      `${publicUrl}/item/${shown.deviationid}?sig=${sig}`,
      `${publicUrl}/?sig=${sig}`,
    ];
    for (const url of refused) expect((await get(url)).status, url.replace(sig, "<sig>")).toBe(401);
    // A signature under another secret key is no signature.
    const foreign = thumbSig(thumbLinkKey(randomBytes(32)), "s", shown.sha256);
    expect((await get(`${publicUrl}/thumb/s/${shown.sha256}.webp?sig=${foreign}`)).status).toBe(401);
    // The other size and the other picture open with their own signatures.
    expect((await get(signedThumbUrl(publicUrl, thumbLinkKey(KEY), "m", shown.sha256))).status).toBe(200);
    expect((await get(signedThumbUrl(publicUrl, thumbLinkKey(KEY), "s", other.sha256))).status).toBe(200);
    // The dashboard's token still opens everything, with or without a signature.
    expect((await get(`${publicUrl}/files/${shown.downloadId}?sig=${sig}`, { authorization: `Bearer ${DASHBOARD_TOKEN}` })).status).toBe(200);
    expect((await get(`${publicUrl}/thumb/m/${shown.sha256}.webp?sig=${flipped}`, { authorization: `Bearer ${DASHBOARD_TOKEN}` })).status).toBe(200);
  });

  it("a foreign Host is refused before the signature is looked at", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      http
        .get(embedThumb, { headers: { host: "evil.example" } }, (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        })
        .on("error", reject);
    });
    expect(status).toBe(421);
  });

  it("keeps every signature out of the log", async () => {
    const sig = sigOf(embedThumb);
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join("\n")).not.toContain(sig);
  });
});
