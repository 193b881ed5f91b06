// The digest's counts over more than it lists (issue 26, item 6): 70 faves on 35 works and 65 new watchers, where
// the digest shows the 30 most faved works and 60 watchers. Its "70 faves" and "65 new watchers" count them all
// (not the page shown: "60 faves" and "60 new watchers" before), and what is not shown is counted as "…and N more".
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessageRepository } from "../../src/db/message.repository.ts";
import { UserRepository } from "../../src/db/user.repository.ts";
import { collectDigest } from "../../src/digest/collect.ts";
import { summaryLine } from "../../src/digest/render-common.ts";
import { digestHtml } from "../../src/digest/render-html.ts";
import { digestText } from "../../src/digest/render-text.ts";
import { createDigestFixture, type DigestFixture } from "../helpers/digest-fixture.ts";
import { deviationJson, makeMessage, makeUser } from "../helpers/mirror-fixtures.ts";

let f: DigestFixture;
const AT = new Date("2026-11-02T10:00:00Z");
const WINDOW = { start: new Date("2026-11-02T08:00:00Z"), end: new Date("2026-11-03T08:00:00Z") };

beforeAll(async () => {
  f = await createDigestFixture();
  const users = Array.from({ length: 70 }, (_, i) => makeUser(100 + i, { username: `fan${i}-${randomBytes(2).toString("hex")}` }));
  await new UserRepository(f.services.pool).upsertUsers(users, AT);
  const messages = new MessageRepository(f.services.pool);
  // Two people fave each of 35 works; 65 of the same people start watching.
  const faves = users.map((u, i) => makeMessage(`fave:${i}`, { originator: u, subject: { deviation: deviationJson({ n: 1 + (i % 35) }) } }));
  const watches = users.slice(0, 65).map((u, i) => makeMessage(`watch:${i}`, { type: "watch", originator: u, subject: {} }));
  await messages.upsertMessages(f.accountId, "feedback", [...faves, ...watches], AT);
});

afterAll(async () => {
  await f?.close();
});

describe("the digest's counts", () => {
  it("count every fave and watcher of the window, not the page the digest lists", async () => {
    const data = await collectDigest({ db: f.services.pool, window: WINDOW, now: WINDOW.end, archiveDir: "/tmp", recordBaselines: false });
    expect(data.feedback.faves).toHaveLength(30);
    expect(data.feedback.watchers).toHaveLength(60);
    expect(data.counts).toMatchObject({ faves: 70, watchers: 65 });
    expect(data.feedback).toMatchObject({ favesTotal: 70, favedWorks: 35, watchersTotal: 65 });
    expect(summaryLine(data.counts)).toContain("70 faves");
    const text = digestText(data, { timezone: "UTC" });
    expect(text).toContain("…and 5 faved works more");
    expect(text).toContain("…and 5 new watchers more");
    const page = digestHtml(data, { timezone: "UTC" }, "subject", "preheader");
    expect(page).toContain("…and 5 faved works more.");
    expect(page).toContain("…and 5 new watchers more.");
  });
});
