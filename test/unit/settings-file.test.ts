// The layers of settings (src/config/settings-file.ts): the file under the environment under a flag, an empty
// variable counting as unset, a byte-order mark and CRLF read through, and a DVAULT_ name the file misspells or a
// line that is not NAME=value refused instead of doing nothing.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { effectiveSettings } from "../../src/config/catalogue.ts";
import { layerSettings } from "../../src/config/settings-file.ts";
import { maskUrl } from "../../src/redact.ts";

const dir = mkdtempSync(path.join(os.tmpdir(), "dvault-layers-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fileWith(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

describe(layerSettings.name, () => {
  it("puts ./.env under the environment and a flag over both, and says where each came from", () => {
    fileWith(".env", "DVAULT_HTTP_PORT=9000\nDVAULT_DOWNLOAD_QUOTA=150\nDVAULT_SYNC_CONCURRENCY=3\nPOSTGRES_PASSWORD=x\n");
    const layers = layerSettings({
      environment: { DVAULT_HTTP_PORT: "9100", DVAULT_SYNC_CONCURRENCY: "" },
      cwd: dir,
      flags: [{ name: "DVAULT_ARCHIVE_DIR", flag: "--archive-dir", value: "/a" }],
    });
    const file = path.join(dir, ".env");
    expect(layers.file).toBe(file);
    expect(layers.env).toMatchObject({ DVAULT_HTTP_PORT: "9100", DVAULT_DOWNLOAD_QUOTA: "150", DVAULT_SYNC_CONCURRENCY: "3", DVAULT_ARCHIVE_DIR: "/a" });
    expect(Object.fromEntries(layers.origins)).toMatchObject({
      DVAULT_HTTP_PORT: { from: "environment" },
      DVAULT_DOWNLOAD_QUOTA: { from: "file", path: file },
      DVAULT_SYNC_CONCURRENCY: { from: "file", path: file },
      DVAULT_ARCHIVE_DIR: { from: "flag", flag: "--archive-dir" },
    });
  });

  it("reads a file with a byte-order mark, CRLF line ends, export and quotes as written", () => {
    const file = fileWith("windows.env", '\uFEFFDVAULT_HTTP_PORT=9000\r\nexport DVAULT_DOWNLOAD_QUOTA=150\r\nDVAULT_ARCHIVE_DIR="/a b" # the archive\r\n');
    expect(layerSettings({ environment: {}, cwd: dir, configFlag: file }).env).toMatchObject({
      DVAULT_HTTP_PORT: "9000",
      DVAULT_DOWNLOAD_QUOTA: "150",
      DVAULT_ARCHIVE_DIR: "/a b",
    });
  });

  it("refuses a line that is not NAME=value, which would swallow the setting under it", () => {
    for (const [text, line] of [
      ["oops\nDVAULT_CLIENT_ID=abc\n", '"oops"'],
      ["DVAULT_CLIENT_ID: abc\nDVAULT_HTTP_PORT=9000\n", '"DVAULT_CLIENT_ID: abc"'],
    ]) {
      const file = fileWith("stray.env", text!);
      expect(() => layerSettings({ environment: {}, cwd: dir, configFlag: file }), text).toThrow(
        `has a line that is not NAME=value: ${line}: write it as NAME=value`,
      );
    }
  });

  it("takes the lines of a quoted value that runs on over lines as the value's, not as lines that are not NAME=value", () => {
    const file = fileWith("multiline.env", 'POSTGRES_PASSWORD="first\nsecond"\nDVAULT_HTTP_PORT=9000\n');
    expect(layerSettings({ environment: {}, cwd: dir, configFlag: file }).env).toMatchObject({
      POSTGRES_PASSWORD: "first\nsecond",
      DVAULT_HTTP_PORT: "9000",
    });
  });

  it("masks the password of a URL typed with a space before it or one slash, as dvault config shows it", () => {
    const file = fileWith(
      "typed.env",
      'DATABASE_URL=" postgres://u:hunter2@h/db"\nREDIS_URL="redis://:r3dispass@h:6379 "\nDVAULT_S3_ENDPOINT=https:/KEY:s3cret@h\n',
    );
    const shown = JSON.stringify(effectiveSettings(layerSettings({ environment: {}, cwd: dir, configFlag: file }), maskUrl));
    for (const secret of ["hunter2", "r3dispass", "s3cret"]) expect(shown).not.toContain(secret);
  });

  it('leaves a misspelt name without the DVAULT_ prefix alone, and takes a compose-style reference as written (README "Configuration")', () => {
    const reference = `${"$"}{HOSTNAME}/`;
    const file = fileWith("compose.env", `DATABASE_ULR=postgresql://127.0.0.1/x\nDVAULT_S3_PREFIX=${reference}\n`);
    const layers = layerSettings({ environment: {}, cwd: dir, configFlag: file });
    expect(layers.env).toMatchObject({ DATABASE_ULR: "postgresql://127.0.0.1/x", DVAULT_S3_PREFIX: reference });
    expect(layers.env.DATABASE_URL).toBeUndefined();
  });

  it("reads the first line of a file that starts with a byte-order mark", () => {
    const file = fileWith("bom.env", "\uFEFFDVAULT_HTTP_PORT=8811\nDVAULT_SYNC_CONCURRENCY=3\n");
    const layers = layerSettings({ environment: {}, cwd: dir, configFlag: file });
    expect(layers.env).toMatchObject({ DVAULT_HTTP_PORT: "8811", DVAULT_SYNC_CONCURRENCY: "3" });
  });

  it("refuses a DVAULT_ name dvault does not read, naming it", () => {
    const file = fileWith("typo.env", "DVAULT_SCHEDULE_GALERY=1h\nDVAULT_NTFY_TOKEN_FILE=/run/secrets/ntfy\n");
    expect(() => layerSettings({ environment: {}, cwd: dir, configFlag: file })).toThrow(
      // The advice works in that folder: `config --help` reads no settings file, `config --template` does (and refuses).
      /names DVAULT_SCHEDULE_GALERY, which dvault does not read: correct the name \(dvault config --help lists every setting/,
    );
  });
});
