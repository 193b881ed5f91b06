// "Track an artist" (POST /track) and "Archive one work" (POST /add): what `dvault track add` and `dvault add`
// do (src/track-lists/track-users.ts, add-one.ts), from the dashboard. Each is a POST with the CSRF token, from
// a plain form (no script needed). Track checks every user on the service and stores none unless all exist, then
// queues their tracked sync; Add stores the work's metadata now and queues its file's download through the
// producer (the worker fetches it: the answer says "queued", never "archived"). A refusal is a page with one
// line of why and what to do: 400 for input, 409 when no account decides or this dashboard cannot queue, 502
// when the service could not be asked.
import type express from "express";
import type { Deviation } from "../../api/types.ts";
import { DownloadRepository } from "../../db/download.repository.ts";
import { UserError } from "../../errors.ts";
import { addedBy, resolveDeviation, storeAddedDeviation } from "../../track-lists/add-one.ts";
import { chooseUserAccount } from "../../track-lists/choose-account.ts";
import { splitUserInputs, trackUsers, usernamesOf } from "../../track-lists/track-users.ts";
import { LookupFailedError } from "../../track-lists/user-on-service.ts";
import type { DashboardContext } from "../context.ts";
import { one, sendPage } from "../respond.ts";
import { boxProblemPage, type UrlBoxes } from "../pages/track.ts";

/** The account a box names, as a problem page's status and line when none decides. */
class BoxRefusal extends UserError {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** What "Archive one work" answers: "Added" only when something was, the work new to the mirror or its file wanted now. */
function addNotice(a: { d: Deviation; hasFile: boolean; stored: boolean; newToMirror: boolean; queued: number; status: string | undefined }): string {
  const work = `"${a.d.title ?? a.d.deviationid}" by ${a.d.author?.username ?? "?"}`;
  if (!a.hasFile) return `Added ${work}: its metadata is stored; ${a.d.is_deleted ? "it is deleted on the service" : "it has no file to download"}.`;
  if (a.stored)
    return a.newToMirror ? `Added ${work}: its metadata is stored; its file was already archived.` : `${work} was already archived: nothing new was added.`;
  if (a.queued) return `Added ${work}: its metadata is stored and its file's download is queued; the worker fetches it.`;
  return `Added ${work}: its metadata is stored and its file is wanted, not queued yet (${a.status?.replace("_", " ") ?? "wanted"}): the worker's next downloads run takes it when it is due.`;
}

/** The boxes' CSRF token and accounts, when this dashboard can run them (the worker's: it queues work). */
export async function urlBoxesFor(ctx: DashboardContext, req: express.Request, res: express.Response): Promise<UrlBoxes | undefined> {
  if (!ctx.deps.actions || !ctx.deps.apiFor) return undefined;
  const accounts = (await ctx.deps.accounts.list()).filter((a) => a.kind === "user").map((a) => a.name);
  return { csrf: ctx.csrf.tokenFor(req, res), accounts };
}

export function trackRoutes(app: express.Express, ctx: DashboardContext): void {
  const { deps, log, csrf } = ctx;

  /** The account and its API client; a BoxRefusal when none decides or this dashboard cannot queue work. */
  const clientFor = async (body: Record<string, unknown>) => {
    const { actions, apiFor } = deps;
    if (!actions || !apiFor) throw new BoxRefusal(409, "Only the worker's dashboard (dvault worker --http) can add and queue work.");
    const choice = chooseUserAccount(await deps.accounts.list(), one(body.account) || undefined);
    if ("unknown" in choice) throw new BoxRefusal(400, `No account is named "${choice.unknown}": choose one from the list.`);
    if ("none" in choice) throw new BoxRefusal(409, "No account is connected yet: connect one first (Connect DeviantArt on the overview).");
    if ("several" in choice) throw new BoxRefusal(400, `Several accounts are connected (${choice.several.join(", ")}): choose one from the list.`);
    const { client } = await apiFor(choice.row.id);
    return { row: choice.row, client, actions };
  };

  /** A refusal's page: its status and one line; anything else goes on to the 500 page (no stack, the log has it). */
  const refuse = (res: express.Response, err: unknown, heading: string, back: string) => {
    if (!(err instanceof UserError)) throw err;
    const status = err instanceof BoxRefusal ? err.status : err instanceof LookupFailedError ? 502 : 400;
    log.warn({ status, reason: err.message }, `dashboard: ${heading.toLowerCase()}`);
    return sendPage(res, status, boxProblemPage(status, heading, err.message, back));
  };

  app.post("/track", ...csrf.guard, async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    try {
      const usernames = usernamesOf(splitUserInputs(one(body.users) ?? ""));
      const { row, client, actions } = await clientFor(body);
      const users = await trackUsers({ client, pool: deps.pool, account: row, usernames, at: new Date(ctx.now()) });
      const names = users.map((u) => u.username);
      const queued = actions.syncTracked ? await actions.syncTracked(row.id, names) : 0;
      log.info({ account: row.name, users: names.length, queued }, "dashboard: users tracked");
      const notice = `Tracking ${names.join(", ")} with the token of ${row.name}. ${
        queued ? `Their first sync is queued (${queued} run${queued === 1 ? "" : "s"}).` : "Their first sync runs with the tracked schedule."
      }`;
      const to = names.length === 1 ? `/artists/${encodeURIComponent(names[0] ?? "")}` : "/artists";
      return res.redirect(303, `${to}?${new URLSearchParams({ done: notice }).toString()}`);
    } catch (err) {
      return refuse(res, err, "Nothing was tracked", "/artists");
    }
  });

  app.post("/add", ...csrf.guard, async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    try {
      const input = (one(body.url) ?? "").trim();
      if (!input) throw new UserError("No URL given: paste a deviation's URL (…/artist/art/title-123) or its id.");
      const { row, client, actions } = await clientFor(body);
      // A URL is resolved by walking the artist's gallery: a browser that hangs up stops the walk.
      const hangUp = new AbortController();
      res.on("close", () => hangUp.abort());
      const d = await resolveDeviation(client, input, hangUp.signal);
      const { files: wanted, newToMirror } = await storeAddedDeviation({
        pool: deps.pool,
        client,
        deviation: d,
        added: addedBy("added from the dashboard"),
        at: new Date(ctx.now()),
        signal: hangUp.signal,
      });
      const [file] = wanted;
      const before = file && (await new DownloadRepository(deps.pool).findDownloadTarget(d.deviationid, file.kind));
      const stored = before?.status === "done" || before?.status === "degraded";
      const queued = file && !stored && actions.downloadWorks ? await actions.downloadWorks(row.id, [d.deviationid]) : 0;
      log.info({ account: row.name, deviationid: d.deviationid, queued }, "dashboard: work added");
      const notice = addNotice({ d, hasFile: !!file, stored, newToMirror, queued, status: before?.status });
      return res.redirect(303, `/item/${encodeURIComponent(d.deviationid)}?${new URLSearchParams({ done: notice }).toString()}`);
    } catch (err) {
      return refuse(res, err, "Nothing was added", "/");
    }
  });
}
