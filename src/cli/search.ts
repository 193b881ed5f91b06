// `dvault search <text>`: full-text search over the archive (titles, descriptions, tags, journal and
// literature text, comments, notes, messages), with the local file when it is archived.
import { Option, type Command } from "commander";
import { loadConfig } from "../config.ts";
import { connectPg } from "../db/connect.ts";
import { UserError } from "../errors.ts";
import {
  DEFAULT_SEARCH_LIMIT,
  HIGHLIGHT_END,
  HIGHLIGHT_START,
  highlight,
  SEARCH_KINDS,
  searchArchive,
  type SearchHit,
  type SearchKind,
} from "../search/search.ts";

type SearchCliOptions = { type?: SearchKind; user?: string; limit: number; json?: boolean };

function parseLimit(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 500) throw new UserError(`--limit expects a whole number from 1 to 500, not "${value}"`);
  return n;
}

/** The JSON form: the snippet as plain text plus the matched words. */
export function hitToJson(hit: SearchHit) {
  const matches = [...hit.snippet.matchAll(new RegExp(`${HIGHLIGHT_START}([^${HIGHLIGHT_END}]*)${HIGHLIGHT_END}`, "g"))].map((m) => m[1] ?? "");
  return { ...hit, snippet: highlight(hit.snippet, (w) => w), matches: [...new Set(matches)] };
}

export function formatHits(hits: readonly SearchHit[], tty: boolean): string {
  if (hits.length === 0) return "no matches";
  const bold = (w: string) => (tty ? `\u001b[1m${w}\u001b[22m` : w);
  const lines: string[] = [];
  for (const hit of hits) {
    const by = hit.artist ? ` by ${hit.artist}` : "";
    const date = hit.date ? ` · ${hit.date.slice(0, 10)}` : "";
    lines.push(`${hit.kind.padEnd(10)} ${JSON.stringify(hit.title ?? "(untitled)")}${by}${date}  [${hit.id}]`);
    if (hit.snippet) lines.push(`           ${highlight(hit.snippet, bold)}`);
    if (hit.localPath) lines.push(`           file: ${hit.localPath}`);
  }
  lines.push(`${hits.length} match${hits.length === 1 ? "" : "es"}`);
  return lines.join("\n");
}

export function registerSearchCommand(program: Command): void {
  program
    .command("search")
    .description("search the archive: titles, descriptions, tags, journal and literature text, comments, notes and messages")
    .argument("<text...>", 'what to look for: words, "a phrase", -excluded, or either OR other')
    .addOption(new Option("--type <kind>", "only this kind of item").choices([...SEARCH_KINDS]))
    .option("--user <name>", "only by this artist (deviations, comments), sender (notes) or originator (messages)")
    .option("--limit <n>", "at most this many results (1-500)", parseLimit, DEFAULT_SEARCH_LIMIT)
    .option("--json", "print the results as JSON")
    .action(async (words: string[], opts: SearchCliOptions) => {
      const config = loadConfig();
      const client = await connectPg(config.databaseUrl);
      try {
        const hits = await searchArchive(client, {
          text: words.join(" "),
          type: opts.type,
          user: opts.user,
          limit: opts.limit,
          archiveDir: config.archiveDir,
        }).catch((err: unknown) => {
          // 42703: undefined column, i.e. the search migration has not been applied to this database.
          if ((err as { code?: string }).code === "42703") throw new UserError("this database has no search index yet: run dvault migrate");
          throw err;
        });
        process.stdout.write(`${opts.json ? JSON.stringify(hits.map(hitToJson), null, 2) : formatHits(hits, Boolean(process.stdout.isTTY))}\n`);
      } finally {
        await client.end();
      }
    });
}
