// COPY as streams on the pg driver (src/db/copy-stream.ts): each way ends, on success and on every failure, with the
// connection usable for the next statement (a COPY the server refused, a source that fails before or during the
// copy), and a reader that stops reading holds the server back instead of buffering its rows.
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPg } from "../../src/db/connect.ts";
import { CopyInStream, copyIn, copyOut } from "../../src/db/copy-stream.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let db: TestDatabase;
let client: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase();
  client = await connectPg(db.url);
  await client.query("CREATE TEMP TABLE t (id int PRIMARY KEY, body text)");
});

afterAll(async () => {
  await client?.end();
  await db?.drop();
});

const drain = () => new Writable({ write: (_c, _e, done) => done() });
const usable = async () => expect((await client.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);

describe(CopyInStream.name, () => {
  it("loads rows, counts them, and reads them back with their text escapes", async () => {
    const copy = copyIn(client, "COPY t (id, body) FROM STDIN");
    await pipeline(Readable.from([Buffer.from("1\tone\\nline\n2\t\\N\n")]), copy);
    expect(copy.rows).toBe(2);
    const out = copyOut(client, "COPY (SELECT id, body FROM t WHERE id IN (1, 2) ORDER BY id) TO STDOUT");
    const chunks: Buffer[] = [];
    await pipeline(
      out,
      new Writable({
        write: (c: Buffer, _e, done) => {
          chunks.push(c);
          done();
        },
      }),
    );
    expect(Buffer.concat(chunks).toString()).toBe("1\tone\\nline\n2\t\\N\n");
    expect(out.rows).toBe(2);
    expect((await client.query<{ body: string }>("SELECT body FROM t WHERE id = 1")).rows[0]?.body).toBe("one\nline");
  });

  it("takes an empty source (a table with no rows)", async () => {
    const copy = copyIn(client, "COPY t (id, body) FROM STDIN");
    await pipeline(Readable.from([]), copy);
    expect(copy.rows).toBe(0);
    await usable();
  });

  it("fails with the server's words on a row it refuses, and the connection goes on", async () => {
    await expect(pipeline(Readable.from([Buffer.from("x\ty\n")]), copyIn(client, "COPY t (id, body) FROM STDIN"))).rejects.toThrow(
      /invalid input syntax for type integer: "x"/,
    );
    await usable();
  });

  it("sends CopyFail when its source fails, before the server answered and after rows went in", async () => {
    const early = Readable.from(
      (async function* () {
        yield* [];
        throw new Error("source broke at once");
      })(),
    );
    await expect(pipeline(early, copyIn(client, "COPY t (id, body) FROM STDIN"))).rejects.toThrow(/source broke at once/);
    await usable();
    const late = Readable.from(
      (async function* () {
        yield Buffer.from("10\tten\n");
        throw new Error("source broke half-way");
      })(),
    );
    await expect(pipeline(late, copyIn(client, "COPY t (id, body) FROM STDIN"))).rejects.toThrow(/source broke half-way/);
    await usable();
    expect((await client.query("SELECT 1 FROM t WHERE id = 10")).rowCount).toBe(0);
  });

  it("refuses a COPY TO of a table that does not exist, and the connection goes on", async () => {
    await expect(pipeline(copyOut(client, "COPY nope TO STDOUT"), drain())).rejects.toThrow(/relation "nope" does not exist/);
    await usable();
  });

  it("holds the server back while its reader does not read", async () => {
    await client.query("CREATE TEMP TABLE big AS SELECT i AS id, repeat('x', 1000) AS body FROM generate_series(1, 20000) AS i");
    const out = copyOut(client, "COPY big (id, body) TO STDOUT");
    // Nothing reads: the stream fills its buffer, pauses the socket, and holds about its high-water mark, not 20 MB.
    await expect.poll(() => out.readableLength).toBeGreaterThan(0);
    await expect.poll(() => out.readableLength, { timeout: 2000 }).toBeGreaterThanOrEqual(out.readableHighWaterMark);
    expect(out.readableLength).toBeLessThan(4 * out.readableHighWaterMark);
    await pipeline(out, drain());
    expect(out.rows).toBe(20_000);
    await usable();
  });
});

describe("COPY TO a reader that fails", () => {
  it("lets the rest through unread, so the connection goes on", async () => {
    const out = copyOut(client, "COPY (SELECT i, repeat('y', 1000) FROM generate_series(1, 20000) AS i) TO STDOUT");
    const failing = new Writable({ write: (_c, _e, done) => done(new Error("disk full")) });
    await expect(pipeline(out, failing)).rejects.toThrow(/disk full/);
    await usable();
  });
});
