// The SQL the demo prints (src/db/demo-queries.ts) answers what it says, on a small mirror; and the commands it prints
// (src/cli/demo.ts) run as pasted on a server that asks for a password, which they never show.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { databaseEnv, DVAULT_COMMAND, queryLines } from "../../src/cli/demo.ts";
import { shellWord } from "../../src/text/shell-word.ts";
import type { DemoReport } from "../../src/demo/run-demo.ts";
import { writeDemoPassFile } from "../../src/demo/pass-file.ts";
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

/**
 * A PostgreSQL server as far as its password: it refuses SSL and GSS encryption, asks for the password in clear
 * (AuthenticationCleartextPassword), keeps what the client sends, and ends the connection with an error.
 */
async function passwordTaker(host = "127.0.0.1"): Promise<{ port: number; passwords: string[]; close(): void }> {
  const passwords: string[] = [];
  const server = net.createServer((socket) => {
    let buffer = Buffer.alloc(0);
    let started = false;
    socket.on("error", () => undefined);
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        // Before the startup: int32 length, int32 code; after it: a type byte, then int32 length.
        const head = started ? 1 : 0;
        if (buffer.length < head + 4) return;
        const length = buffer.readInt32BE(head);
        if (buffer.length < head + length) return;
        const message = buffer.subarray(0, head + length);
        buffer = buffer.subarray(head + length);
        if (!started && [80877103, 80877104].includes(message.readInt32BE(4))) socket.write("N");
        else if (!started) {
          started = true;
          socket.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]));
        } else if (message[0] === 0x70) {
          passwords.push(message.subarray(5, message.length - 1).toString("utf8"));
          const fields = Buffer.from("SFATAL\0C28P01\0Mthe test's server keeps the password and goes\0\0");
          const error = Buffer.alloc(5);
          error.write("E");
          error.writeInt32BE(4 + fields.length, 1);
          socket.end(Buffer.concat([error, fields]));
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { port: (server.address() as net.AddressInfo).port, passwords, close: () => server.close() };
}

/** A printed line run as a person pastes it into a shell, in another folder than the demo's. */
function paste(line: string, cwd: string): Promise<void> {
  const child = spawn("sh", ["-c", line.trim()], { cwd, env: { PATH: process.env.PATH ?? "", HOME: cwd }, stdio: "ignore" });
  return new Promise((resolve) => child.on("close", () => resolve()));
}

describe("the demo's printed commands", () => {
  // An IPv6 address too: bracketed in the URL, bare in the password file's line and to the driver (src/db/pg-fields.ts).
  // A demo folder whose name holds a space and a quote (--dir "my demo's"): quoted in the printed commands.
  it.each([
    ["127.0.0.1", "127.0.0.1", "dvault-demo-pass-"],
    ["::1", "[::1]", "dvault-demo-pass-"],
    ["127.0.0.1", "127.0.0.1", "dvault demo's pass-"],
  ])(
    "name no password, and run as pasted where the server asks for one: psql and dvault read it from the demo's PGPASSFILE (%s as %s, folder %s…)",
    async (address, host, prefix) => {
      const server = await passwordTaker(address);
      const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
      // A colon and a backslash: escaped in the password file; a space and an @: encoded in the URL.
      const password = "pa:ss\\w @rd";
      const report = { databaseUrl: `postgresql://demo:${encodeURIComponent(password)}@${host}:${server.port}/dvault_demo` } as DemoReport;
      try {
        const passFile = writeDemoPassFile(dir, report.databaseUrl);
        expect(passFile && statSync(passFile).mode & 0o777).toBe(0o600);
        const env = databaseEnv(report, { ownServer: undefined, engine: "postgres", passFile });
        const psql = queryLines(report, { ownServer: undefined, passFile }, env).filter((l) => l.includes("psql"));
        const printed = [env, ...psql].join("\n");
        expect(printed).not.toContain(encodeURIComponent(password));
        expect(printed).not.toContain("***");
        expect(env).toBe(
          `PGPASSFILE=${shellWord(passFile ?? "")} DATABASE_URL=${shellWord(`postgresql://demo@${host}:${server.port}/dvault_demo`)} DVAULT_ENGINE=postgres`,
        );
        await paste(`${env} ${DVAULT_COMMAND} status`, dir);
        expect(server.passwords).toContain(password);
        // psql, where its client is installed (dvault does not need it).
        if (spawnSync("psql", ["--version"]).status === 0) {
          const before = server.passwords.length;
          await paste(psql[0] ?? "", dir);
          expect(server.passwords.slice(before)).toEqual([password]);
        }
      } finally {
        server.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
