// The digest's pictures, from the thumbnails in the archive's blob store (src/storage/store.ts, a bucket or
// the local folder), as each channel can carry them: inline parts (`cid:`) for SMTP, files beside the HTML
// for the file channel, and for the webhook, ntfy and Discord a signed link to the dashboard's /thumb/s/
// route when DVAULT_PUBLIC_URL says where the dashboard is. The signature (src/storage/thumb-link.ts) opens that
// one thumbnail without the dashboard's token, so the channel's readers see it even when the dashboard
// needs one. The service's image links are signed and short-lived
// (docs/service-behaviour.md#image-url-tokens), so a digest never carries one: a deviation the archive holds
// no file of, or whose thumbnail cannot be made, gets the quiet placeholder of render-html.ts.
import { signedThumbUrl } from "../storage/thumb-link.ts";
import { jpegOf } from "../storage/thumbnail-render.ts";
import type { Thumbnails } from "../storage/thumbnails.ts";
import type { DigestChannel } from "../config/digest.ts";
import type { DeviationRef, DigestData, DigestImage } from "./types.ts";

export type DigestImageOptions = {
  channel: DigestChannel;
  thumbs: Thumbnails;
  /**
   * Where the dashboard's /thumb/ route is reachable (DVAULT_PUBLIC_URL), and the thumbnail link key
   * (thumbLinkKey of the secret key), read only when a picture is linked: the linked channels' pictures.
   */
  /** linkKey: undefined where the install has no key (lost): the pictures are then not linked, and no key is made. */
  dashboard: { url: string; linkKey: () => Buffer | undefined } | undefined;
  /** The folder name (beside the HTML) the file channel writes the images into. */
  filesDir: string;
};

/** The channels that carry pictures as signed links to the dashboard's /thumb/ route, never as bytes. */
const LINKED_PICTURES: ReadonlySet<DigestChannel> = new Set(["webhook", "ntfy", "discord"]);

/** Every deviation a digest shows, each replaced through `fn` (the data is not changed in place). */
function mapDeviations(data: DigestData, fn: (d: DeviationRef) => DeviationRef): DigestData {
  const opt = <T extends { deviation: DeviationRef | null }>(x: T): T => (x.deviation ? { ...x, deviation: fn(x.deviation) } : x);
  return {
    ...data,
    feedback: {
      ...data.feedback,
      faves: data.feedback.faves.map((f) => ({ ...f, deviation: fn(f.deviation) })),
      comments: data.feedback.comments.map(opt),
    },
    mentions: data.mentions.map(opt),
    deviations: { ...data.deviations, items: data.deviations.items.map((n) => ({ ...n, deviation: fn(n.deviation) })) },
    changes: data.changes.map(opt),
  };
}

function shownFiles(data: DigestData): string[] {
  const shas = new Set<string>();
  mapDeviations(data, (d) => {
    if (d.sha256 && !d.isMature) shas.add(d.sha256);
    return d;
  });
  return [...shas];
}

/** The digest with each thumbnail's address for `channel`, and the images the message must carry. */
export async function digestImages(data: DigestData, opts: DigestImageOptions): Promise<{ data: DigestData; images: DigestImage[] }> {
  const src = new Map<string, string>();
  const images: DigestImage[] = [];
  for (const sha256 of shownFiles(data)) {
    if (LINKED_PICTURES.has(opts.channel)) {
      const dashboard = opts.dashboard;
      const linkKey = dashboard?.linkKey();
      if (dashboard && linkKey && (await opts.thumbs.findOriginal(sha256))) src.set(sha256, signedThumbUrl(dashboard.url, linkKey, "s", sha256));
      continue;
    }
    // A thumbnail that cannot be made (the file gone, a read error) leaves a placeholder: never a failed digest.
    const thumb = await opts.thumbs.get(sha256, "s").catch(() => undefined);
    if (thumb?.type !== "webp") continue;
    if (opts.channel === "smtp") {
      // JPEG: the mail readers that show no WebP (Outlook on Windows) show these.
      const bytes = await jpegOf(thumb.bytes).catch(() => undefined);
      if (!bytes) continue;
      const cid = `thumb-${sha256.slice(0, 32)}@dvault`;
      images.push({ cid, fileName: `${sha256.slice(0, 16)}.jpg`, contentType: "image/jpeg", bytes });
      src.set(sha256, `cid:${cid}`);
    } else {
      const fileName = `${opts.filesDir}/${sha256}.webp`;
      images.push({ cid: "", fileName, contentType: "image/webp", bytes: thumb.bytes });
      src.set(sha256, fileName);
    }
  }
  // A mature work shows no picture (render-html.ts), and the webhook's JSON carries none either.
  const shown = mapDeviations(data, (d) => ({ ...d, thumbUrl: (d.sha256 && !d.isMature && src.get(d.sha256)) || null }));
  return { data: shown, images };
}
