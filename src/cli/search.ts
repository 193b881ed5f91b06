// `dvault search <text>`: full-text search over the archive (titles, descriptions, tags, journal and
// literature text, comments, notes, messages), with the local file when it is archived.
import fs from "node:fs/promises";
import path from "node:path";
import { Option, type Command } from "commander";
import { loadConfig } from "../config.ts";
import type { S3StorageConfig } from "../config/storage.ts";
import { resolveDatabase } from "../db/embedded/resolve.ts";
import { connectReadyDatabase } from "../db/schema-check.ts";
import { ReadableTreeRepository } from "../db/readable-tree.repository.ts";
import type { Queryable } from "../db/with-transaction.ts";
import {
  DEFAULT_SEARCH_LIMIT,
  HIGHLIGHT_END,
  HIGHLIGHT_START,
  highlight,
  SEARCH_KINDS,
  searchPage,
  type SearchHit,
  type SearchKind,
} from "../search/search.ts";
import { buildReadableLinks, MAX_FOLDER_DEPTH, originalKeyOf } from "../storage/links.ts";
import { colorsFor } from "./output/mode.ts";
import type { Colors } from "./output/terminal.ts";
import { printJson, printOut } from "./output/print.ts";
import { limitOption } from "./limit-option.ts";

type SearchCliOptions = { type?: SearchKind; user?: string; limit: number; json?: boolean };

/** The JSON form: the snippet as plain text plus the matched words. */
export function hitToJson(hit: SearchHit) {
  const matches = [...hit.snippet.matchAll(new RegExp(`${HIGHLIGHT_START}([^${HIGHLIGHT_END}]*)${HIGHLIGHT_END}`, "g"))].map((m) => m[1] ?? "");
  return { ...hit, snippet: highlight(hit.snippet, (w) => w), matches: [...new Set(matches)] };
}

/** What the page does not say by itself: how many hits in all, the words ignored, and the readable link of each stored file. */
export type HitsContext = { total?: number; ignored?: readonly string[]; links?: ReadonlyMap<string, string> };

export function formatHits(hits: readonly SearchHit[], colors: Colors | undefined, context: HitsContext = {}): string {
  const ignored = context.ignored?.length ? `ignored ${context.ignored.map((w) => `"${w}"`).join(", ")}: too common a word to search for` : undefined;
  if (hits.length === 0) return ignored ? `no matches (${ignored})` : "no matches";
  const bold = colors?.bold ?? ((w: string) => w);
  const lines: string[] = [];
  for (const hit of hits) {
    const by = hit.artist ? ` by ${hit.artist}` : "";
    const date = hit.date ? ` · ${hit.date.slice(0, 10)}` : "";
    lines.push(`${hit.kind.padEnd(10)} ${JSON.stringify(hit.title ?? "(untitled)")}${by}${date}  [${hit.id}]`);
    if (hit.snippet) lines.push(`           ${highlight(hit.snippet, bold)}`);
    if (hit.localPath) lines.push(`           file: ${context.links?.get(hit.localPath) ?? hit.localPath}`);
  }
  const total = Math.max(context.total ?? hits.length, hits.length);
  const matches = `match${total === 1 ? "" : "es"}`;
  lines.push(total > hits.length ? `${hits.length} of ${total} ${matches}; see more with --limit ${Math.min(total, MAX_LIMIT)}` : `${total} ${matches}`);
  if (ignored) lines.push(ignored);
  return lines.join("\n");
}

const MAX_LIMIT = 500;

/**
 * The readable link (by-user/…, src/storage/links.ts) of each hit's stored file, where it is on disk: a person
 * recognises "by-user/artist/Gallery/Title [id].png" where "originals/21/3f/…" says nothing.
 */
async function readableLinks(db: Queryable, archiveDir: string, hits: readonly SearchHit[]): Promise<Map<string, string>> {
  const wanted = new Set(hits.flatMap((h) => (h.localPath ? [h.localPath] : [])));
  const out = new Map<string, string>();
  if (wanted.size === 0) return out;
  const placements = (await new ReadableTreeRepository(db).listPlacements(MAX_FOLDER_DEPTH)).filter((p) => hits.some((h) => h.deviationid === p.deviationid));
  for (const link of buildReadableLinks(placements, archiveDir)) {
    const target = path.join(archiveDir, link.target);
    if (!wanted.has(target) || out.has(target)) continue;
    const abs = path.join(archiveDir, link.linkPath);
    if (
      await fs.lstat(abs).then(
        () => true,
        () => false,
      )
    )
      out.set(target, abs);
  }
  return out;
}

/** With the archive in a bucket, each hit's file as its s3:// address (no local path to show). */
function bucketUrls(s3: S3StorageConfig, archiveDir: string, hits: readonly SearchHit[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const h of hits) {
    const key = h.localPath ? originalKeyOf(h.localPath, archiveDir) : undefined;
    if (h.localPath && key) out.set(h.localPath, `s3://${s3.bucket}/${s3.prefix}${key}`);
  }
  return out;
}

export function registerSearchCommand(program: Command): void {
  program
    .command("search")
    .description("search the archive: titles, descriptions, tags, journal and literature text, comments, notes and messages")
    .argument("<text...>", 'what to look for: words, "a phrase", -excluded, or either OR other')
    .addOption(new Option("--type <kind>", "only this kind of item").choices([...SEARCH_KINDS]))
    .option("--user <name>", "only by this artist (deviations, comments), sender (notes) or originator (messages)")
    .option("--limit <n>", "at most this many results (1-500)", limitOption(500), DEFAULT_SEARCH_LIMIT)
    .option("--json", "print the results as JSON")
    .action(async (words: string[], opts: SearchCliOptions) => {
      const { config, release } = await resolveDatabase(loadConfig());
      // A database without the search migration (or none at all) is refused here with the one "run dvault migrate" line.
      const client = await connectReadyDatabase(config.databaseUrl).catch((err: unknown) => {
        release();
        throw err;
      });
      try {
        const page = await searchPage(client, {
          text: words.join(" "),
          type: opts.type,
          user: opts.user,
          limit: opts.limit,
          archiveDir: config.archiveDir,
          countIgnored: !opts.json,
        });
        if (opts.json) return printJson(page.hits.map(hitToJson));
        const links =
          config.storage.kind === "s3" ? bucketUrls(config.storage, config.archiveDir, page.hits) : await readableLinks(client, config.archiveDir, page.hits);
        // "OR" is the query's syntax (websearch_to_tsquery), not a word that was ignored.
        const ignored = page.ignored.filter((w) => !(w === "or" && /\bOR\b/.test(words.join(" "))));
        printOut(formatHits(page.hits, colorsFor(), { total: page.total, ignored, links }));
      } finally {
        await client.end();
        release();
      }
    });
}
