// `dvault digest --preview`: the digest as it would go out now, written to files; nothing is sent, no
// digest is recorded and no channel's window moves.
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { storedDownloadsPausedProbe } from "./alerts.ts";
import { collectDigest } from "./collect.ts";
import { CronClock } from "./cron-time.ts";
import { DigestRepository } from "../db/digest.repository.ts";
import { renderDigest } from "./render.ts";
import { digestImages } from "./images.ts";
import { thisWriterTag } from "../queue/holder.ts";
import { openBlobStore } from "../storage/store.ts";
import { Thumbnails } from "../storage/thumbnails.ts";
import type { DigestServices } from "./run-digest.ts";
import type { DigestData, DigestWindow } from "./types.ts";
import { makeDirs } from "../make-dirs.ts";
import { UserError } from "../errors.ts";
import { errCode } from "../storage/layout.ts";

export type PreviewResult = { window: DigestWindow; subject: string; counts: DigestData["counts"]; files: { html: string; text: string; json: string } };

/**
 * Where the next digest would start: the earliest window end of the configured channels, else the latest
 * cron tick (the window the next tick would close), else a day ago.
 */
export async function nextWindowStart(services: DigestServices, now: Date): Promise<Date> {
  const repo = new DigestRepository(services.pool);
  const ends = (await Promise.all(services.config.digest.channels.map((c) => repo.lastWindowEnd(c)))).filter((d): d is Date => d !== null);
  if (ends.length) return new Date(Math.min(...ends.map((d) => d.getTime())));
  const clock = new CronClock(services.config.digest.cron, services.config.digest.timezone);
  try {
    const tick = clock.latestTickAtOrBefore(now);
    return tick && tick.getTime() < now.getTime() ? tick : new Date(now.getTime() - 86_400_000);
  } finally {
    clock.destroy();
  }
}

export async function previewDigest(services: DigestServices, opts: { since?: Date; out?: string } = {}): Promise<PreviewResult> {
  const now = new Date(services.now());
  const start = opts.since ?? (await nextWindowStart(services, now));
  if (start.getTime() >= now.getTime()) {
    // Without --since: a digest's window already ends after this machine's time (its clock stepped back, or the host that
    // sent it ran ahead), which the line said was a --since given.
    throw new UserError(
      opts.since
        ? `--since ${start.toISOString()} is not in the past: give an earlier time, or a duration back from now such as 36h or 2d`
        : `the last digest's window ends at ${start.toISOString()}, after this machine's time (${now.toISOString()}): is its clock behind? Give --since to preview an earlier window`,
    );
  }
  const window = { start, end: now };
  const data = await collectDigest({
    db: services.pool,
    window,
    now,
    archiveDir: services.config.archiveDir,
    downloadsPaused: storedDownloadsPausedProbe(services.coord, services.config.redisPrefix),
    installKey: services.installKey?.(),
  });
  // The pictures as the file channel shows them: the archive's thumbnails, in a folder beside the HTML.
  const shown = await digestImages(data, {
    channel: "file",
    thumbs: new Thumbnails(openBlobStore(services.config, { writer: thisWriterTag() })),
    dashboard: undefined,
    filesDir: "digest_files",
  });
  const rendered = renderDigest(shown.data, { timezone: services.config.digest.timezone, mode: "preview" });
  const dir = opts.out ? path.resolve(opts.out) : await mkdtemp(path.join(os.tmpdir(), "dvault-digest-preview-"));
  const files = { html: path.join(dir, "digest.html"), text: path.join(dir, "digest.txt"), json: path.join(dir, "digest.json") };
  try {
    await makeDirs(dir);
    if (shown.images.length > 0) await makeDirs(path.join(dir, "digest_files"));
    for (const image of shown.images) await writeFile(path.join(dir, image.fileName), image.bytes);
    await writeFile(files.html, rendered.html);
    await writeFile(files.text, rendered.text);
    await writeFile(files.json, `${JSON.stringify({ subject: rendered.subject, ...data }, null, 2)}\n`);
  } catch (err) {
    // A folder that cannot be made or written (a file in the way, /proc, a read-only or full disk) is the person's to change.
    const code = errCode(err);
    if (code === undefined) throw err;
    throw new UserError(`cannot write the preview to ${dir} (${code}): give --out a folder that can be written`);
  }
  return { window, subject: rendered.subject, counts: data.counts, files };
}
