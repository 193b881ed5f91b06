// The settings file and the layers of settings: a default, the file (./.env, or the one `--config <file>` or
// DVAULT_CONFIG names), the environment, a command's flag; each later one wins. The file is `.env` format
// parsed by Node's own util.parseEnv (the format docker compose's env_file reads), so no parser is added.
import { readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";
import { EnvSchema } from "../config.ts";
import { UserError } from "../errors.ts";
import { DIGEST_SECRET_FILES } from "./digest.ts";
import { STORAGE_SECRET_FILES } from "./storage.ts";

export type Env = Record<string, string | undefined>;

/** Where a setting's value came from, as `dvault config` says it. */
export type Origin = { from: "default" } | { from: "file"; path: string } | { from: "environment" } | { from: "flag"; flag: string };

export type SettingsLayers = Readonly<{
  /** The environment with the file's values under it and the flags' over it: what loadConfig reads. */
  env: Env;
  /** The file read, if any. */
  file: string | undefined;
  /** Each name the file, the environment or a flag set (a name absent here has its default). */
  origins: ReadonlyMap<string, Origin>;
}>;

/** A value given by a flag: `--archive-dir` sets DVAULT_ARCHIVE_DIR. */
export type FlagSetting = { name: string; flag: string; value: string };

/** Which file to read: the named one (it must exist), or ./.env when there is one. */
function settingsFile(named: { path: string; by: string } | undefined, cwd: string): string | undefined {
  if (!named) {
    const beside = path.join(cwd, ".env");
    return statSync(beside, { throwIfNoEntry: false })?.isFile() ? beside : undefined;
  }
  const file = path.resolve(cwd, named.path);
  const stat = statSync(file, { throwIfNoEntry: false });
  if (!stat)
    throw new UserError(
      `the settings file ${file} (named by ${named.by}) does not exist: create it (dvault config --template > ${named.path}) or name another`,
    );
  if (!stat.isFile()) throw new UserError(`the settings file ${file} (named by ${named.by}) is not a file: name a .env-format file`);
  return file;
}

/** The names dvault reads: the schema's, the secrets' `_FILE` forms, and DVAULT_CONFIG itself. */
const KNOWN = new Set<string>([...Object.keys(EnvSchema.shape), ...[...DIGEST_SECRET_FILES, ...STORAGE_SECRET_FILES].map((n) => `${n}_FILE`), "DVAULT_CONFIG"]);

/**
 * A DVAULT_ name in the file that dvault does not read is a typo that would otherwise do nothing at all (a
 * DVAULT_SCHEDULE_GALERY leaves the gallery on its default): refused. Other names (docker compose's
 * POSTGRES_PASSWORD) are the file's other readers'.
 */
function unknownNames(values: Env, file: string): void {
  const unknown = Object.keys(values).filter((name) => name.startsWith("DVAULT_") && !KNOWN.has(name));
  if (unknown.length === 0) return;
  throw new UserError(
    `the settings file ${file} names ${unknown.join(", ")}, which dvault does not read: correct the name (dvault config --help lists every setting)`,
  );
}

/** A line that sets a name: NAME=value, with `export ` before it or not; the value is group 1. */
const SETTING_LINE = /^[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]*[ \t]*=[ \t]*(.*)$/;

/**
 * The first line of the file's text that is neither NAME=value, a comment nor blank. parseEnv says nothing of one,
 * and what it does with one depends on Node: 20 takes it as the start of the next line's name, so the setting under
 * it is dropped; 22 and 24 skip the line itself, so a YAML-style `NAME: value` is dropped. A quoted value may run on
 * over lines to its closing quote, as parseEnv reads one: those lines are the value's.
 */
function strayLine(text: string): string | undefined {
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    const value = SETTING_LINE.exec(line)?.[1];
    if (value === undefined) return line.trim();
    const quote = value[0];
    if ((quote === '"' || quote === "'" || quote === "`") && !value.includes(quote, 1)) {
      const closing = lines.findIndex((later, j) => j > i && later.includes(quote));
      if (closing !== -1) i = closing;
    }
  }
  return undefined;
}

/**
 * A line that is not NAME=value would lose a setting without a word (strayLine), so the file is refused. Every name
 * parseEnv gives must be one too: Node 20 reads an indented `# comment` as the start of the next line's name.
 */
function malformedLines(text: string, values: Env, file: string): void {
  const bad =
    strayLine(text) ??
    Object.keys(values)
      .find((name) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      ?.split("\n")[0];
  if (bad === undefined) return;
  throw new UserError(
    `the settings file ${file} has a line that is not NAME=value: ${JSON.stringify(bad)}: write it as NAME=value, or start it with # to keep it as a comment`,
  );
}

function readFile(file: string): Env {
  let text: string;
  let values: Env;
  try {
    // A byte-order mark (Windows editors write one) would become part of the first name, leaving it unread.
    text = readFileSync(file, "utf8").replace(/^\uFEFF/, "");
    values = parseEnv(text);
  } catch (err) {
    throw new UserError(`the settings file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): make it readable`);
  }
  malformedLines(text, values, file);
  unknownNames(values, file);
  return values;
}

/**
 * The layered settings of `environment` (the process's, untouched): the file under it, `flags` over it. The
 * file is the one `configFlag` names, else DVAULT_CONFIG's, else ./.env in `cwd` if there is one.
 */
export function layerSettings({
  environment,
  cwd,
  configFlag,
  flags = [],
}: {
  environment: Env;
  cwd: string;
  configFlag?: string | undefined;
  flags?: readonly FlagSetting[];
}): SettingsLayers {
  const named = configFlag
    ? { path: configFlag, by: "--config" }
    : environment.DVAULT_CONFIG?.trim()
      ? { path: environment.DVAULT_CONFIG, by: "DVAULT_CONFIG" }
      : undefined;
  const file = settingsFile(named, cwd);
  const fromFile = file ? readFile(file) : {};
  const origins = new Map<string, Origin>();
  const env: Env = { ...environment };
  for (const [name, value] of Object.entries(fromFile)) {
    // An empty or blank variable counts as unset, as in the schema (fields.ts): docker compose's `X: ${X:-}` passes one.
    if (environment[name] !== undefined && environment[name].trim() !== "") origins.set(name, { from: "environment" });
    else {
      env[name] = value;
      if (file) origins.set(name, { from: "file", path: file });
    }
  }
  for (const name of Object.keys(environment)) if (!origins.has(name)) origins.set(name, { from: "environment" });
  for (const f of flags) {
    env[f.name] = f.value;
    origins.set(f.name, { from: "flag", flag: f.flag });
  }
  return { env, file, origins };
}

let applied: { layers: SettingsLayers; original: Env; configFlag: string | undefined; flags: readonly FlagSetting[]; cwd: string } | undefined;

/**
 * Layers the settings into this process's environment, once at the start of a command (src/cli/program.ts):
 * every command's loadConfig() then reads the file's values as it reads the environment's.
 */
export function applySettings({
  configFlag,
  flags = [],
  cwd = process.cwd(),
}: {
  configFlag?: string | undefined;
  flags?: readonly FlagSetting[];
  cwd?: string;
}): SettingsLayers {
  const original = applied?.original ?? { ...process.env };
  const layers = layerSettings({ environment: original, cwd, configFlag, flags });
  for (const [name, value] of Object.entries(layers.env)) if (value !== undefined) process.env[name] = value;
  applied = { layers, original, configFlag, flags, cwd };
  return layers;
}

/** The layers applied at start (or, in a process that applied none, the environment alone). */
export function appliedSettings(): SettingsLayers {
  return applied?.layers ?? layerSettings({ environment: { ...process.env, DVAULT_CONFIG: undefined }, cwd: process.cwd(), configFlag: undefined });
}

/**
 * The settings as the file now says (the worker re-reads it on SIGHUP): the same file, environment and flags as
 * at start; undefined in a process that applied none (a test's worker keeps its config).
 */
export function rereadSettings(): SettingsLayers | undefined {
  if (!applied) return undefined;
  return layerSettings({ environment: applied.original, cwd: applied.cwd, configFlag: applied.configFlag, flags: applied.flags });
}

/**
 * Sets `name` in the settings file: its line (each one, if written twice) becomes `NAME=value`, else its commented
 * template line (`# NAME=default`, as `dvault init` writes the file) does, else the line is added at the end. The
 * file is replaced whole (a temporary file renamed over it, with its mode), so a reader never sees half of it.
 */
export function writeSettingToFile(file: string, name: string, value: string): void {
  const text = readFileSync(file, "utf8");
  const line = `${name}=${/[\s#"'$]/.test(value) ? JSON.stringify(value) : value}`;
  const active = new RegExp(`^[ \\t]*(export[ \\t]+)?${name}[ \\t]*=.*$`, "gm");
  const commented = new RegExp(`^#[ \\t]*${name}=.*$`, "m");
  const next = active.test(text)
    ? text.replace(active, line)
    : commented.test(text)
      ? text.replace(commented, line)
      : `${text}${text === "" || text.endsWith("\n") ? "" : "\n"}${line}\n`;
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, next, { mode: statSync(file).mode & 0o777 });
  renameSync(temporary, file);
}
