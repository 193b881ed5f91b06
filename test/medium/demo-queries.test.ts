// The SQL the demo prints (src/db/demo-queries.ts) answers what it says, on a small mirror.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_QUERIES } from "../../src/db/demo-queries.ts";
import { DeviationRepository } from "../../src/db/deviation.repository.ts";
import { FolderRepository } from "../../src/db/folder.repository.ts";
import { distinctUsers } from "../../src/db/mirror-rows.ts";
import { UserRepository } from "../../src/db/user.repository.ts";
import { at, createMirrorDb, insertAccount, makeDeviation, type MirrorDb, uuid } from "../helpers/mirror-fixtures.ts";

let m: MirrorDb;

beforeAll(async () => {
  m = await createMirrorDb();
  await insertAccount(m.pool, "me", uuid(9, "u"));
  const t = at("2025-03-01T00:00:00Z");
  const works = [makeDeviation({ n: 1, author: 1 }), makeDeviation({ n: 2, author: 2 }), makeDeviation({ n: 3, author: 2 })];
  await new UserRepository(m.pool).upsertUsers(distinctUsers(works.map((d) => d.author)), t);
  await new DeviationRepository(m.pool).upsertDeviations(works, t);
  const folders = new FolderRepository(m.pool);
  await folders.upsertCollectionFolders(
    uuid(9, "u"),
    [
      { folderid: uuid(1, "c"), name: "Featured" },
      { folderid: uuid(2, "c"), name: "Birds" },
    ],
    t,
  );
  // Work 1 is faved once but sits in two collections, as every favourite in a folder also sits in Featured.
  const member = (d: (typeof works)[number], position: number) => ({ deviationid: d.deviationid, position });
  await folders.upsertFolderMembership("collection", uuid(1, "c"), [member(works[0]!, -3), member(works[1]!, -2), member(works[2]!, -1)], t);
  await folders.upsertFolderMembership("collection", uuid(2, "c"), [member(works[0]!, -1)], t);
});
afterAll(async () => {
  await m?.drop();
});

describe("the demo's queries", () => {
  it("counts each favourite of an artist once, whatever number of collections hold it", async () => {
    const query = DEMO_QUERIES.find((q) => q.what === "whose work fills my favourites");
    const { rows } = await m.pool.query(query?.sql ?? "");
    expect(rows.map((r) => [r.username, Number(r.faves)])).toEqual([
      ["artist2", 2],
      ["artist1", 1],
    ]);
  });
});
