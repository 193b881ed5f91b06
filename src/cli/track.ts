// `dvault track add|remove|list|import|export`: mirror other users' public gallery, collections and journals.
import type { Command } from "commander";
import { TrackedUserRepository } from "../db/tracked-user.repository.ts";
import { EXIT_INTERRUPTED, UserError } from "../errors.ts";
import { deviationRefFromText } from "../track-lists/deviation-ref.ts";
import { exportFormat, exportTrackList, openTrackList, writeTrackListFile } from "../track-lists/files.ts";
import { importTrackList } from "../track-lists/import-list.ts";
import { quoted } from "../track-lists/parse.ts";
import { formatImportReport } from "../track-lists/report-text.ts";
import { trackUsers, untrackUsers, usernamesOf } from "../track-lists/track-users.ts";
import { colorsFor } from "./output/mode.ts";
import { printDocument, printJson, printOut } from "./output/print.ts";
import { formatTable } from "./output/table.ts";
import { stopOnSignal } from "./stop-signal.ts";
import { withServices } from "./with-services.ts";
import { pickUserAccount } from "./pick-account.ts";

const IMPORT_SUMMARY =
  "track every user of a list: usernames one a line, OPML (profile or RSS URLs) or a dvault JSON export; running it again adds nothing, and the account's own user is skipped";

export function registerTrackCommand(program: Command): void {
  const track = program.command("track").description("mirror other users' public gallery, collections and journals");
  track
    .command("add <user...>")
    .description(
      "start mirroring users: usernames, ~name, or profile, gallery or favourites URLs (what track import reads; a work's page tracks its artist: one work alone is dvault add); the service is asked that each exists, and nothing is added unless all do and none is the account's own user, whose own sources archive it already (the worker picks them up within 5 minutes; dvault sync --once --only tracked runs them now)",
    )
    .option("--account <name>", "the account whose token is used (it sees mature items; a client token would not)")
    .action(async (inputs: string[], opts: { account?: string }) =>
      withServices(async (services) => {
        const usernames = usernamesOf(inputs);
        const row = await pickUserAccount(services, opts.account);
        const { client } = await services.apiFor(row.id);
        const users = await trackUsers({ client, pool: services.pool, account: row, usernames, at: new Date(services.now()) });
        for (const user of users) printOut(`tracking ${user.username} with the token of ${row.name}`);
        // A work's page names its artist, whom it tracks (as track import does); one work alone is `dvault add`.
        for (const input of inputs.filter((i) => "numericId" in deviationRefFromText(i)))
          printOut(`${quoted(input.trim())} is a work's page: its artist is tracked (every work of theirs); to archive only that work: dvault add <URL>`);
      }),
    );
  track
    .command("remove <user...>")
    .description("stop mirroring users, named as add takes them (a username, ~name or a profile URL); what is archived stays")
    .option("--account <name>", "the account that tracks the users")
    .action(async (inputs: string[], opts: { account?: string }) =>
      withServices(async (services) => {
        const usernames = usernamesOf(inputs);
        const row = await pickUserAccount(services, opts.account);
        const stopped = await untrackUsers({ pool: services.pool, account: row, usernames, at: new Date(services.now()) });
        for (const username of stopped) printOut(`stopped tracking ${username}; everything archived from them stays`);
      }),
    );
  track
    .command("list")
    .description("list tracked users")
    .option("--account <name>", "only this account's")
    .option("--json", "print JSON")
    .action(async (opts: { account?: string; json?: boolean }) =>
      withServices(async (services) => {
        const rows = (await services.accounts.list()).filter((r) => r.kind === "user" && (!opts.account || r.name === opts.account));
        const repo = new TrackedUserRepository(services.pool);
        const out = [];
        for (const row of rows) for (const t of await repo.listTrackedUsers(row.id)) out.push({ account: row.name, ...t });
        if (opts.json) return printJson(out);
        if (out.length === 0) return printOut("no tracked users; add one with dvault track add <username>");
        const colors = colorsFor();
        const table = out.map((t) => [t.account, t.username, t.tokenKind, t.limitation ?? ""]);
        printOut(formatTable(["account", "user", "token", "note"], table, { colors, paint: (cell, _r, column) => (column === 3 ? colors.dim(cell) : cell) }));
      }),
    );
  track
    .command("import <file>")
    .description(IMPORT_SUMMARY)
    .option("--format <format>", "opml, txt or json (default: from the file's extension, then its content)")
    .option("--account <name>", "the account whose token is used (default: the only one, or each JSON entry's account)")
    .option("--resolve", "ask the service whether each new user exists (one call per 50) and leave out those it does not know")
    .option("--dry-run", "report what would be added without changing anything")
    .option("--json", "print the report as JSON")
    .action(async (file: string, opts: { format?: string; account?: string; resolve?: boolean; dryRun?: boolean; json?: boolean }) => {
      const stop = stopOnSignal("track import");
      try {
        // The file's format is known (an OPML or JSON list read whole) before any connection: a wrong file costs one
        // line and no waiting. A txt list is read as the import goes, in one transaction that a stop rolls back.
        const list = await openTrackList(file, opts.format, stop.signal);
        await withServices(async (services) => {
          const accounts = (await services.accounts.list()).filter((r) => r.kind === "user");
          const report = await importTrackList({
            pool: services.pool,
            list,
            accounts,
            ...(opts.account !== undefined ? { forcedAccount: await pickUserAccount(services, opts.account) } : {}),
            defaultAccount: () => pickUserAccount(services, undefined),
            ...(opts.resolve ? { clientFor: async (a: { id: number }) => (await services.apiFor(a.id)).client } : {}),
            dryRun: !!opts.dryRun,
            at: new Date(services.now()),
            signal: stop.signal,
          });
          if (opts.json) printJson({ file, ...report });
          else printOut(formatImportReport(file, report));
        });
      } catch (err) {
        if (stop.signal.aborted) throw new UserError("track import stopped: nothing was added; run it again", EXIT_INTERRUPTED);
        throw err;
      } finally {
        stop.dispose();
      }
    });
  track
    .command("export")
    .description("write the tracked users as OPML (a feed reader subscribes to their RSS), usernames one a line, or JSON with every per-user option")
    .option("--format <format>", "opml, txt or json (default: from --output's extension, else opml)")
    .option("--output <file>", "write to this file instead of standard output")
    .option("--account <name>", "only this account's")
    .action(async (opts: { format?: string; output?: string; account?: string }) => {
      const format = exportFormat(opts.format, opts.output);
      await withServices(async (services) => {
        const accounts = opts.account ? [await pickUserAccount(services, opts.account)] : (await services.accounts.list()).filter((r) => r.kind === "user");
        const text = await exportTrackList({
          repo: new TrackedUserRepository(services.pool),
          accounts,
          format,
          now: new Date(services.now()),
        });
        if (opts.output) await writeTrackListFile(opts.output, text);
        else printDocument(text);
      });
    });
}
