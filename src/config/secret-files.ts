// `<NAME>_FILE` for secret settings: the value is read from that file (a Docker or systemd secret) instead of
// the environment, where `docker inspect` and /proc/<pid>/environ would show it. Resolved before the schema
// parses the environment, so every later check sees one value whichever way it came.
import { readFileSync } from "node:fs";

export type SecretFilesResult = { env: Record<string, string | undefined>; problems: string[] };

/**
 * The environment with each `<name>_FILE` of `names` read into `<name>`. A trailing newline (what `echo` and
 * most editors leave) is dropped; setting both the variable and its _FILE is a problem, not a silent choice.
 */
export function readSecretFiles(env: Record<string, string | undefined>, names: readonly string[]): SecretFilesResult {
  const out: Record<string, string | undefined> = { ...env };
  const problems: string[] = [];
  for (const name of names) {
    const file = env[`${name}_FILE`]?.trim();
    if (!file) continue;
    if (env[name]?.trim()) {
      problems.push(`${name} and ${name}_FILE are both set: keep one`);
      continue;
    }
    try {
      out[name] = readFileSync(file, "utf8").replace(/\r?\n$/, "");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
      problems.push(`${name}_FILE ${file} cannot be read (${code}): point it at a readable file holding the value`);
    }
  }
  return { env: out, problems };
}
