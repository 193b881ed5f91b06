// The storage settings (src/config/storage.ts): local by default, a bucket with DVAULT_STORAGE=s3, credentials
// given directly or through files, one line per problem, and the secret never in a dump or a log line.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { scrubString, scrubValue } from "../../src/redact.ts";
import { openBlobStore } from "../../src/storage/store.ts";

const load = (env: Record<string, string>) => loadConfig({ HOME: "/nonexistent", ...env }, "/srv/dvault");
const problem = (env: Record<string, string>) => {
  try {
    load(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  return undefined;
};

const SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY";

describe("storage configuration", () => {
  it("keeps the archive folder unless told otherwise, and needs no S3 variable then", () => {
    expect(load({}).storage).toEqual({ kind: "local" });
    expect(load({ DVAULT_STORAGE: "local", DVAULT_S3_ACCESS_KEY_ID: "GK1", DVAULT_S3_ENDPOINT: "http://127.0.0.1:3900" }).storage).toEqual({
      kind: "local",
    });
  });

  it("reads a bucket on an S3-compatible server, path-style by default when an endpoint is set", () => {
    const { storage } = load({
      DVAULT_STORAGE: "S3",
      DVAULT_S3_ENDPOINT: "http://127.0.0.1:3900/",
      DVAULT_S3_BUCKET: "my-archive",
      DVAULT_S3_PREFIX: "/dvault/main",
      DVAULT_S3_ACCESS_KEY_ID: "GK123456",
      DVAULT_S3_SECRET_ACCESS_KEY: SECRET,
      DVAULT_S3_PRESIGN: "yes",
      DVAULT_S3_PRESIGN_TTL: "120",
    });
    expect(storage).toEqual({
      kind: "s3",
      endpoint: "http://127.0.0.1:3900",
      bucket: "my-archive",
      region: "us-east-1",
      prefix: "dvault/main/",
      forcePathStyle: true,
      credentials: { accessKeyId: "GK123456", secretAccessKey: SECRET },
      presign: true,
      presignTtlSeconds: 120,
    });
    // AWS itself: virtual-hosted addressing, the SDK's own credentials, no presigned URLs unless asked.
    expect(load({ DVAULT_STORAGE: "s3", DVAULT_S3_BUCKET: "my-archive", DVAULT_S3_REGION: "eu-west-3" }).storage).toMatchObject({
      endpoint: undefined,
      region: "eu-west-3",
      prefix: "",
      forcePathStyle: false,
      credentials: undefined,
      presign: false,
      presignTtlSeconds: 300,
    });
  });

  it("reads credentials from files, without their trailing newline", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dvault-creds-"));
    try {
      fs.writeFileSync(path.join(dir, "id"), "GK123456\n");
      fs.writeFileSync(path.join(dir, "secret"), `${SECRET}\n`);
      const { storage } = load({
        DVAULT_STORAGE: "s3",
        DVAULT_S3_BUCKET: "my-archive",
        DVAULT_S3_ACCESS_KEY_ID_FILE: path.join(dir, "id"),
        DVAULT_S3_SECRET_ACCESS_KEY_FILE: path.join(dir, "secret"),
      });
      expect(storage.kind === "s3" && storage.credentials).toEqual({ accessKeyId: "GK123456", secretAccessKey: SECRET });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("names each bad variable in one line that says what to do", () => {
    expect(problem({ DVAULT_STORAGE: "ftp" })).toMatch(/DVAULT_STORAGE expects local \(the archive folder\) or s3/);
    expect(problem({ DVAULT_STORAGE: "s3" })).toMatch(/DVAULT_S3_BUCKET must be set when DVAULT_STORAGE is s3/);
    expect(problem({ DVAULT_STORAGE: "s3", DVAULT_S3_BUCKET: "My_Bucket" })).toMatch(/DVAULT_S3_BUCKET expects a bucket name/);
    expect(problem({ DVAULT_STORAGE: "s3", DVAULT_S3_BUCKET: "b-1", DVAULT_S3_ENDPOINT: "127.0.0.1:3900" })).toMatch(
      /DVAULT_S3_ENDPOINT expects the server's http/,
    );
    expect(problem({ DVAULT_STORAGE: "s3", DVAULT_S3_BUCKET: "b-1", DVAULT_S3_PREFIX: "a/../b" })).toMatch(/DVAULT_S3_PREFIX expects a folder/);
    expect(problem({ DVAULT_STORAGE: "s3", DVAULT_S3_BUCKET: "b-1", DVAULT_S3_PRESIGN_TTL: "0" })).toMatch(/DVAULT_S3_PRESIGN_TTL expects seconds/);
    expect(problem({ DVAULT_STORAGE: "s3", DVAULT_S3_BUCKET: "b-1", DVAULT_S3_FORCE_PATH_STYLE: "maybe" })).toMatch(
      /DVAULT_S3_FORCE_PATH_STYLE expects true or false/,
    );
    expect(problem({ DVAULT_STORAGE: "s3", DVAULT_S3_BUCKET: "b-1", DVAULT_S3_ACCESS_KEY_ID: "GK1" })).toMatch(
      /DVAULT_S3_ACCESS_KEY_ID and DVAULT_S3_SECRET_ACCESS_KEY go together/,
    );
    const both = problem({
      DVAULT_STORAGE: "s3",
      DVAULT_S3_BUCKET: "b-1",
      DVAULT_S3_SECRET_ACCESS_KEY: SECRET,
      DVAULT_S3_SECRET_ACCESS_KEY_FILE: "/run/secrets/s3",
      DVAULT_S3_ACCESS_KEY_ID: "GK1",
    });
    expect(both).toMatch(/DVAULT_S3_SECRET_ACCESS_KEY and DVAULT_S3_SECRET_ACCESS_KEY_FILE are both set: keep one/);
    expect(both).not.toContain(SECRET);
    const missing = problem({
      DVAULT_STORAGE: "s3",
      DVAULT_S3_BUCKET: "b-1",
      DVAULT_S3_ACCESS_KEY_ID: "GK1",
      DVAULT_S3_SECRET_ACCESS_KEY_FILE: "/nonexistent/s3-secret",
    });
    expect(missing).toMatch(/DVAULT_S3_SECRET_ACCESS_KEY_FILE \/nonexistent\/s3-secret cannot be read \(ENOENT\): point it at a readable file/);
    for (const message of [both, missing]) expect(message?.split("\n")).toHaveLength(1);
  });

  it("never shows the secret: not in a config dump, a log line, or where the store says it is", () => {
    const config = load({
      DVAULT_STORAGE: "s3",
      DVAULT_S3_BUCKET: "my-archive",
      DVAULT_S3_ENDPOINT: "https://s3.example.org",
      DVAULT_S3_ACCESS_KEY_ID: "GK123456",
      DVAULT_S3_SECRET_ACCESS_KEY: SECRET,
    });
    expect(JSON.stringify(scrubValue(config))).not.toContain(SECRET);
    const store = openBlobStore(config);
    expect(store.describe()).toBe("s3://my-archive/ at s3.example.org");
    // Once a store holds the credentials, the secret is masked wherever it turns up in text.
    expect(scrubString(`request failed with ${SECRET} in it`)).toBe("request failed with [redacted] in it");
  });
});
