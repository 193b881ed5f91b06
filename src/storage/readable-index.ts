// The readable tree of an archive kept in a bucket, where there are no links: the same list of readable names
// (links.ts) written as objects beside the originals — by-user/index.json (every readable path and the key it
// stands for, for scripts), by-user/index.html (the users) and by-user/<user>/index.html (that user's files by
// folder, each a relative link to its original). A bucket served as a static site, or copied to a disk with
// `aws s3 sync`, browses like the local tree. Objects that did not change are not written again, and pages of
// users no longer listed are removed (docs/storage-readers.md).
import { escapeHtml } from "../text/html.ts";
import { ARCHIVE_PAGE_HEAD } from "../text/inert-html.ts";
import type { BlobStore } from "./blob-store.ts";
import { READABLE_DIR } from "./layout.ts";
import type { ReadableLink } from "./readable-tree.ts";

export const READABLE_INDEX_JSON = `${READABLE_DIR}/index.json`;
const INDEX_HTML = "index.html";

/** A path segment as an href: each byte outside the unreserved set escaped. */
function href(segments: readonly string[]): string {
  return segments.map((s) => encodeURIComponent(s)).join("/");
}

/** A page of the tree: the CSP of every page dvault writes for people (src/text/inert-html.ts), names escaped. */
function page(title: string, body: string): string {
  return `${ARCHIVE_PAGE_HEAD}<title>${escapeHtml(title)}</title></head>\n<body>\n<h1>${escapeHtml(title)}</h1>\n${body}</body></html>\n`;
}

/** The objects that stand for `links`, by key. */
export function readableIndexObjects(links: readonly ReadableLink[]): Map<string, string> {
  const objects = new Map<string, string>();
  const seen = new Set<string>();
  const byUser = new Map<string, { rest: string[]; target: string }[]>();
  const entries: { path: string; key: string }[] = [];
  for (const link of links) {
    if (seen.has(link.linkPath)) continue;
    seen.add(link.linkPath);
    entries.push({ path: link.linkPath, key: link.target });
    const [, user, ...rest] = link.linkPath.split("/");
    if (!user || rest.length === 0) continue;
    byUser.set(user, [...(byUser.get(user) ?? []), { rest, target: link.target }]);
  }
  objects.set(READABLE_INDEX_JSON, `${JSON.stringify({ format: 1, links: entries }, null, 1)}\n`);
  const users = [...byUser.keys()].sort();
  objects.set(
    `${READABLE_DIR}/${INDEX_HTML}`,
    page("by user", `<ul>\n${users.map((u) => `<li><a href="${href([u, INDEX_HTML])}">${escapeHtml(u)}</a></li>\n`).join("")}</ul>\n`),
  );
  for (const user of users) {
    const files = (byUser.get(user) ?? []).sort((a, b) => (a.rest.join("/") < b.rest.join("/") ? -1 : 1));
    let body = "";
    let folder: string | undefined;
    for (const f of files) {
      const here = f.rest.slice(0, -1).join(" / ") || "(top)";
      if (here !== folder) {
        body += `${folder === undefined ? "" : "</ul>\n"}<h2>${escapeHtml(here)}</h2>\n<ul>\n`;
        folder = here;
      }
      // From by-user/<user>/index.html up to the root, then the original's key.
      body += `<li><a href="../../${href(f.target.split("/"))}">${escapeHtml(f.rest[f.rest.length - 1] ?? "")}</a></li>\n`;
    }
    if (folder !== undefined) body += "</ul>\n";
    objects.set(`${READABLE_DIR}/${user}/${INDEX_HTML}`, page(user, body));
  }
  return objects;
}

/** Makes the index objects under by-user/ exactly those for `links`. */
export async function writeReadableIndex(store: BlobStore, links: readonly ReadableLink[]): Promise<{ written: number; removed: number }> {
  const wanted = readableIndexObjects(links);
  const present = new Map<string, number>();
  for await (const info of store.list(`${READABLE_DIR}/`)) present.set(info.key, info.size);
  let written = 0;
  let removed = 0;
  for (const [key, text] of wanted) {
    const bytes = Buffer.from(text);
    // Read back only when the size matches: most pages that changed changed in length.
    if (present.get(key) === bytes.length && (await store.read(key))?.equals(bytes)) continue;
    await store.write(key, bytes);
    written++;
  }
  for (const key of present.keys()) {
    if (wanted.has(key)) continue;
    await store.remove(key);
    removed++;
  }
  return { written, removed };
}
