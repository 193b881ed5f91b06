// The last step of `dvault engine migrate` (src/engine/setting.ts): DVAULT_ENGINE written into the settings file in
// use (its line, else the template's commented line, else a new line), also when the environment sets it, with a
// line naming the variable to change.
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { layerSettings } from "../../src/config/settings-file.ts";
import { switchEngineSetting } from "../../src/engine/setting.ts";

function settingsFile(text: string): { dir: string; file: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "dvault-engine-setting-"));
  const file = path.join(dir, ".env");
  writeFileSync(file, text, { mode: 0o600 });
  return { dir, file };
}

describe(switchEngineSetting.name, () => {
  it("replaces the file's own line, every copy of it, and keeps the rest and the file's mode", () => {
    const { dir, file } = settingsFile("DATABASE_URL=embedded\nDVAULT_ENGINE=redis\n# a note\nexport DVAULT_ENGINE = redis\n");
    const out = switchEngineSetting(layerSettings({ environment: {}, cwd: dir }), "postgres");
    expect(out).toEqual({ written: file, line: `wrote DVAULT_ENGINE=postgres to ${file}` });
    expect(readFileSync(file, "utf8")).toBe("DATABASE_URL=embedded\nDVAULT_ENGINE=postgres\n# a note\nDVAULT_ENGINE=postgres\n");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(layerSettings({ environment: {}, cwd: dir }).env.DVAULT_ENGINE).toBe("postgres");
  });

  it("sets the template's commented line, as dvault init writes the file, or adds a line to a file without one", () => {
    const template = settingsFile("# DVAULT_ENGINE=redis\nREDIS_URL=redis://h:6379");
    switchEngineSetting(layerSettings({ environment: {}, cwd: template.dir }), "postgres");
    expect(readFileSync(template.file, "utf8")).toBe("DVAULT_ENGINE=postgres\nREDIS_URL=redis://h:6379");
    const bare = settingsFile("REDIS_URL=redis://h:6379");
    switchEngineSetting(layerSettings({ environment: {}, cwd: bare.dir }), "redis");
    expect(readFileSync(bare.file, "utf8")).toBe("REDIS_URL=redis://h:6379\nDVAULT_ENGINE=redis\n");
  });

  it("when the environment sets DVAULT_ENGINE: writes the file all the same, and says to change the variable too", () => {
    const { dir, file } = settingsFile("DVAULT_ENGINE=redis\n");
    const out = switchEngineSetting(layerSettings({ environment: { DVAULT_ENGINE: "redis" }, cwd: dir }), "postgres");
    expect(out).toEqual({
      written: file,
      line: `wrote DVAULT_ENGINE=postgres to ${file}; DVAULT_ENGINE is set in the environment: change it to DVAULT_ENGINE=postgres there before dvault runs again`,
    });
    expect(readFileSync(file, "utf8")).toBe("DVAULT_ENGINE=postgres\n");
  });

  it("the move back as a refused process prints it (DVAULT_ENGINE=postgres for that command alone) writes the file: it names redis after that command", () => {
    // After `engine migrate --to postgres` wrote the file, `DVAULT_ENGINE=postgres dvault engine migrate --to redis`
    // (src/queue/holder.ts) moves the install back; the variable is gone after that command, and a file still naming
    // postgres had every process reading it refused on the engine the install left.
    const { dir, file } = settingsFile("LOG_LEVEL=info\nDVAULT_ENGINE=postgres\n");
    switchEngineSetting(layerSettings({ environment: { DVAULT_ENGINE: "postgres" }, cwd: dir }), "redis");
    expect(readFileSync(file, "utf8")).toBe("LOG_LEVEL=info\nDVAULT_ENGINE=redis\n");
    expect(layerSettings({ environment: {}, cwd: dir }).env.DVAULT_ENGINE).toBe("redis");
  });

  it("when the environment sets DVAULT_ENGINE and no file is in use: says to change it there", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "dvault-engine-setting-"));
    expect(switchEngineSetting(layerSettings({ environment: { DVAULT_ENGINE: "redis" }, cwd: dir }), "postgres")).toEqual({
      written: undefined,
      line: "DVAULT_ENGINE is set in the environment: change it to DVAULT_ENGINE=postgres there before dvault runs again",
    });
  });

  it("an empty DVAULT_ENGINE in the environment counts as unset: the file is written, as it decides", () => {
    const { dir, file } = settingsFile("# DVAULT_ENGINE=redis\n");
    const out = switchEngineSetting(layerSettings({ environment: { DVAULT_ENGINE: "" }, cwd: dir }), "postgres");
    expect(out.written).toBe(file);
    expect(layerSettings({ environment: { DVAULT_ENGINE: "" }, cwd: dir }).env.DVAULT_ENGINE).toBe("postgres");
  });

  it("with no settings file in use: says where to set it", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "dvault-engine-setting-"));
    expect(switchEngineSetting(layerSettings({ environment: {}, cwd: dir }), "postgres").line).toBe(
      "no settings file is in use: set DVAULT_ENGINE=postgres in the environment (or in ./.env) before dvault runs again",
    );
  });
});
