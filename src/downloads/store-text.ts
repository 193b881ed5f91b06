// A journal's or literature's text stored as an HTML file (from /deviation/content, or its excerpt), inert wherever it
// is opened (src/text/inert-html.ts).
import type { DownloadTarget } from "../db/download.repository.ts";
import { html } from "../text/html.ts";
import { textPage } from "../text/inert-html.ts";
import { afterStore } from "./after-store.ts";
import type { DownloadDeps } from "./deps.ts";
import type { DownloadOutcome } from "./outcome.ts";

export async function storeText(deps: DownloadDeps, t: DownloadTarget): Promise<DownloadOutcome> {
  const at = new Date(deps.services.now());
  const fields = t.deviation.raw as { excerpt?: unknown; text_content?: { excerpt?: unknown } };
  const excerpt =
    t.text?.excerpt ??
    (typeof fields.excerpt === "string" ? fields.excerpt : typeof fields.text_content?.excerpt === "string" ? fields.text_content.excerpt : null);
  // The service's HTML body as it came (textPage makes it inert; the database keeps it whole); an excerpt is plain text, escaped.
  const body = t.text?.html ?? (excerpt ? html`<p>${excerpt}</p>`.text : null);
  if (!body) {
    const reason = "no text: the service returned neither the body nor an excerpt";
    await deps.repo.markDownloadNotDownloadable({ id: t.id, reason, at });
    return { status: "not_downloadable", reason, rendition: null, bytes: 0, partial: false };
  }
  const page = textPage({ title: t.deviation.title ?? t.deviationid, css: t.text?.css ?? null, body });
  const bytes = Buffer.from(page, "utf8");
  // Texts are written to the archive too: paused with the originals when the disk is nearly full.
  await deps.guard.check(bytes.length);
  const stored = await deps.archive.storeBytes({ bytes, ext: "html" });
  const partial = t.text?.html ? null : "excerpt only: the service's /deviation/content gave no full text";
  const old = await deps.repo.markDownloadStored({
    id: t.id,
    status: "done",
    rendition: "html",
    path: stored.relPath,
    size: stored.size,
    sha256: stored.sha256,
    mime: "text/html",
    isPartial: partial !== null,
    partialReason: partial,
    bytes: 0,
    at,
  });
  await afterStore(deps, old.oldPath, stored.relPath);
  return { status: "done", rendition: "html", size: stored.size, bytes: 0, upgraded: false, deduplicated: stored.deduplicated, partial: partial !== null };
}
