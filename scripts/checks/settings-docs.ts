// `npm run check:settings`: .env.example and the README's settings table are what src/config/catalogue.ts renders
// from the settings' schema; one line per copy that drifted, exit 1. `--write` renders both anew.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { renderReadmeTable, renderTemplate } from "../../src/config/catalogue.ts";

export const README_BEGIN = "<!-- settings table: generated from src/config/catalogue.ts by npm run settings:write -->";
export const README_END = "<!-- end of the settings table -->";

/** The README with its settings table rendered anew between the markers; undefined when a marker is missing. */
export function withReadmeTable(readme: string): string | undefined {
  const begin = readme.indexOf(README_BEGIN);
  const end = readme.indexOf(README_END);
  if (begin < 0 || end < begin) return undefined;
  return `${readme.slice(0, begin + README_BEGIN.length)}\n${renderReadmeTable()}\n${readme.slice(end)}`;
}

/** What drifted from the schema: one line per copy, empty when both agree. */
export function settingsDrift({ envExample, readme }: { envExample: string; readme: string }): string[] {
  const problems: string[] = [];
  if (envExample !== renderTemplate()) problems.push(".env.example differs from dvault config --template");
  const rendered = withReadmeTable(readme);
  if (rendered === undefined) problems.push(`README.md lacks the settings table's markers (${README_BEGIN} … ${README_END})`);
  else if (rendered !== readme) problems.push("README.md's settings table differs from the settings' schema");
  return problems;
}

function main(): void {
  const root = path.resolve(import.meta.dirname, "..", "..");
  const files = { envExample: path.join(root, ".env.example"), readme: path.join(root, "README.md") };
  const current = { envExample: readFileSync(files.envExample, "utf8"), readme: readFileSync(files.readme, "utf8") };
  if (process.argv.includes("--write")) {
    writeFileSync(files.envExample, renderTemplate());
    const readme = withReadmeTable(current.readme);
    if (readme === undefined) throw new Error(`README.md lacks the markers ${README_BEGIN} and ${README_END}`);
    writeFileSync(files.readme, readme);
    return;
  }
  const problems = settingsDrift(current);
  for (const p of problems) console.log(`${p}: run npm run settings:write (the schema is src/config/catalogue.ts)`);
  if (problems.length) process.exit(1);
  console.log("settings: .env.example and the README's table match the settings' schema");
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) main();
