// Atom feeds: how long the dashboard takes to answer a feed reader, over a large mirror. A scratch database
// is filled with SQL (users, deviations first seen over a year, a stored file for half of them, messages and
// notes), then each feed is fetched over HTTP through the real dashboard, token check included, and the
// arrivals feed once more without the index on deviations' first-seen time, to show what the index buys.
//
//   node --import tsx bench/feeds.ts [--deviations 100000] [--rounds 30] [--no-write]
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { FeedTokenRepository } from "../src/db/feed-token.repository.ts";
import { issueFeedToken } from "../src/http/feeds/feed-token.ts";
import { startDashboard } from "../src/http/server.ts";
import { createBenchEnv, machine, median, percentile, table, writeDocSection } from "./bench-env.ts";

const { values } = parseArgs({
  options: { deviations: { type: "string", default: "100000" }, rounds: { type: "string", default: "30" }, "no-write": { type: "boolean", default: false } },
});
const DEVIATIONS = Math.max(1000, Number(values.deviations));
const ROUNDS = Math.max(5, Number(values.rounds));
const USERS = 1000;
const MESSAGES = Math.round(DEVIATIONS / 5);
const NOTES = Math.round(DEVIATIONS / 20);

const env = await createBenchEnv({ sim: { seed: 3, dataset: { deviations: 1 } } });
try {
  const db = env.services.pool;
  const filled = process.hrtime.bigint();
  await db.query(
    `INSERT INTO users (userid, username, raw) SELECT 'u-' || i, 'artist' || i, '{}'::jsonb FROM generate_series(1, $1) i ON CONFLICT DO NOTHING`,
    [USERS],
  );
  await db.query(
    `INSERT INTO deviations (deviationid, title, author_userid, type, published_at, raw, first_seen_at, last_seen_at)
     SELECT 'd-' || i, 'Work number ' || i, 'u-' || (i % $2 + 1), 'image', now() - (i || ' minutes')::interval, '{}'::jsonb,
       now() - ((i * 5) || ' minutes')::interval, now()
     FROM generate_series(1, $1) i`,
    [DEVIATIONS, USERS],
  );
  await db.query(
    `INSERT INTO deviation_metadata (deviationid, description, raw) SELECT 'd-' || i, '<b>About</b> work ' || i || repeat(' words', 40), '{}'::jsonb
     FROM generate_series(1, $1, 3) i`,
    [DEVIATIONS],
  );
  await db.query(
    `INSERT INTO downloads (deviationid, kind, status, path, size, sha256, mime, done_at, updated_at)
     SELECT 'd-' || i, 'original', 'done', 'originals/' || md5(i::text) || '.png', 100000 + i, encode(sha256(i::text::bytea), 'hex'), 'image/png', now(), now()
     FROM generate_series(1, $1, 2) i`,
    [DEVIATIONS],
  );
  await db.query(
    `INSERT INTO messages (account_id, messageid, box, type, originator_userid, subject_deviationid, html, raw, first_seen_at, last_seen_at)
     SELECT $1, 'm-' || i, 'feedback', (ARRAY['fave', 'comment', 'mention.deviation'])[i % 3 + 1], 'u-' || (i % $3 + 1), 'd-' || (i * 7 % $4 + 1),
       'a <i>message</i>', '{}'::jsonb, now() - ((i * 3) || ' minutes')::interval, now()
     FROM generate_series(1, $2) i`,
    [env.accountId, MESSAGES, USERS, DEVIATIONS],
  );
  await db.query(
    `INSERT INTO notes (account_id, noteid, subject, body, sender_userid, sent, raw, first_seen_at, last_seen_at)
     SELECT $1, 'n-' || i, 'Hello ' || i, 'a note body', 'u-' || (i % $3 + 1), i % 4 = 0, '{}'::jsonb, now() - ((i * 11) || ' minutes')::interval, now()
     FROM generate_series(1, $2) i`,
    [env.accountId, NOTES, USERS],
  );
  await db.query("ANALYZE");
  const fillSeconds = Number(process.hrtime.bigint() - filled) / 1e9;
  process.stdout.write(`filled ${DEVIATIONS} deviations, ${MESSAGES} messages, ${NOTES} notes in ${fillSeconds.toFixed(1)} s\n`);

  const key = randomBytes(32);
  const { token } = await issueFeedToken({ repo: new FeedTokenRepository(db), key, name: "bench", at: new Date() });
  const dash = await startDashboard({ ...env.services, config: { ...env.config, secretKey: key } }, { port: 0 });
  try {
    const feeds: Array<[string, string]> = [
      ["arrivals (whole archive)", "arrivals.atom"],
      [`one artist (${Math.round(DEVIATIONS / USERS)} works)`, "artists/artist7.atom"],
      ["notifications (messages + notes)", "notifications.atom"],
    ];
    const time = async (file: string) => {
      const ms: number[] = [];
      let bytes = 0;
      for (let i = 0; i < ROUNDS + 3; i++) {
        const started = process.hrtime.bigint();
        const res = await fetch(`${dash.url}/feeds/${token}/${file}`);
        const body = await res.text();
        if (res.status !== 200) throw new Error(`${file}: HTTP ${res.status}`);
        if (i >= 3) ms.push(Number(process.hrtime.bigint() - started) / 1e6); // three warm-ups
        bytes = body.length;
      }
      return { ms, bytes };
    };
    const rows: Array<Array<string | number>> = [];
    for (const [label, file] of feeds) {
      const r = await time(file);
      rows.push([label, median(r.ms).toFixed(1), percentile(r.ms, 95).toFixed(1), (r.bytes / 1024).toFixed(0)]);
      process.stdout.write(`${label}: median ${median(r.ms).toFixed(1)} ms\n`);
    }
    await db.query("DROP INDEX deviations_first_seen_at_deviationid_idx");
    const without = await time("arrivals.atom");
    rows.push([
      "arrivals, without the first-seen index",
      median(without.ms).toFixed(1),
      percentile(without.ms, 95).toFixed(1),
      (without.bytes / 1024).toFixed(0),
    ]);
    process.stdout.write(`arrivals without the index: median ${median(without.ms).toFixed(1)} ms\n`);

    const body = `<a id="feeds"></a>
### Atom feeds: time to answer a feed reader

\`node --import tsx bench/feeds.ts --deviations ${DEVIATIONS} --rounds ${ROUNDS}\` on ${machine()}. A scratch database holds
${DEVIATIONS} deviations by ${USERS} artists (first seen over ${Math.round((DEVIATIONS * 5) / 60 / 24)} days, a stored file for every other one, a
description for every third), ${MESSAGES} messages and ${NOTES} notes. Each feed (50 entries) is fetched ${ROUNDS} times over HTTP from the
dashboard after three warm-ups: the feed token's lookup, the query, the Atom rendering and the transfer. The last row drops
the index on \`deviations (first_seen_at, deviationid)\` (migration 20261126010000_feed_tokens) and fetches the arrivals again.

${table(["feed", "median ms", "p95 ms", "size KB"], rows)}`;
    process.stdout.write(`\n${body}\n`);
    if (!values["no-write"]) await writeDocSection("feeds", body);
  } finally {
    await dash.close();
  }
} finally {
  await env.close();
}
