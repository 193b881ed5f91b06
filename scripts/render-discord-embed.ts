// Writes docs/img/discord-embed.json: the body dvault POSTs to a Discord webhook for the sample digest
// (scripts/sample-digest.ts through the real renderer and src/digest/deliver/discord-message.ts), with the
// thumbnails a public dashboard gives (DVAULT_PUBLIC_URL=https://dvault.example.org).
//   node --import tsx scripts/render-discord-embed.ts [--out docs/img/discord-embed.json]
import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { discordMessage } from "../src/digest/deliver/discord-message.ts";
import { renderDigest } from "../src/digest/render.ts";
import type { DeviationRef, DigestData, OutgoingMessage } from "../src/digest/types.ts";
import { SAMPLE_DIGEST, SAMPLE_TZ } from "./sample-digest.ts";

const { values } = parseArgs({ options: { out: { type: "string", default: "docs/img/discord-embed.json" } } });
const PUBLIC_URL = "https://dvault.example.org";
const KEY = "dvault-digest-discord-20261102T070000Z-20261103T070000Z";

/** What src/digest/images.ts gives a link channel: the dashboard's thumbnail of the archived file. */
const linkedThumb = (d: DeviationRef): DeviationRef => {
  const sha256 = createHash("sha256")
    .update(d.deviationid ?? "")
    .digest("hex");
  return { ...d, sha256, thumbUrl: d.archived ? `${PUBLIC_URL}/thumb/s/${sha256}.webp` : null };
};
const data: DigestData = {
  ...SAMPLE_DIGEST,
  feedback: { ...SAMPLE_DIGEST.feedback, faves: SAMPLE_DIGEST.feedback.faves.map((f) => ({ ...f, deviation: linkedThumb(f.deviation) })) },
  deviations: { ...SAMPLE_DIGEST.deviations, items: SAMPLE_DIGEST.deviations.items.map((n) => ({ ...n, deviation: linkedThumb(n.deviation) })) },
};
const rendered = renderDigest(data, { timezone: SAMPLE_TZ, idempotencyKey: KEY });
const message: OutgoingMessage = {
  kind: "digest",
  idempotencyKey: KEY,
  messageId: `<${KEY}@example.org>`,
  subject: rendered.subject,
  html: rendered.html,
  text: rendered.text,
  payload: {},
  fileBase: KEY,
  date: data.generatedAt,
  digest: data,
};
const out = path.resolve(values.out ?? "docs/img/discord-embed.json");
await writeFile(out, `${JSON.stringify(discordMessage(message, { publicUrl: PUBLIC_URL, timezone: SAMPLE_TZ }), null, 2)}\n`);
console.log(`${rendered.subject}\nwrote ${out}`);
