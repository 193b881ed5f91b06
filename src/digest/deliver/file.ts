// The file channel: one .html and one .txt per digest (or alert) in DVAULT_DIGEST_DIR, named after its
// idempotency key, written to a temporary name and renamed, so a retry rewrites the same two files. The
// thumbnails it shows are files in a folder beside them (<name>_files/), written first, so the HTML still
// shows every picture when it is opened days later.
import path from "node:path";
import type { Deliverer, DeliveryReceipt, OutgoingMessage } from "../types.ts";
import { makeDirs } from "../../make-dirs.ts";
import { writeFileAtomically } from "../../write-atomically.ts";

/** The file name a message's files get (its .html, .txt and _files/ folder), whatever fileBase holds. */
function safeBase(fileBase: string): string {
  return fileBase.replace(/[^A-Za-z0-9._-]/g, "_");
}

/** The folder beside the HTML that holds its images, as the HTML refers to it. */
export function imagesDirOf(fileBase: string): string {
  return `${safeBase(fileBase)}_files`;
}

/** Written whole (src/write-atomically.ts): a retry rewrites the same file, a crash leaves the old one or the new. */
const writeAtomically = (file: string, content: string | Buffer) => writeFileAtomically(file, content, { mode: 0o644 });

export function fileDeliverer(dir: string): Deliverer {
  return {
    channel: "file",
    async deliver(message: OutgoingMessage): Promise<DeliveryReceipt> {
      await makeDirs(dir);
      const base = path.join(dir, safeBase(message.fileBase));
      const images = message.images ?? [];
      if (images.length > 0) await makeDirs(path.join(dir, imagesDirOf(message.fileBase)));
      for (const image of images) {
        // Only the names digest images.ts gives (<dir>_files/<sha256>.webp) are written: never outside `dir`.
        if (!/^[A-Za-z0-9._-]+\/[0-9a-f]{64}\.webp$/.test(image.fileName) || !image.fileName.startsWith(`${imagesDirOf(message.fileBase)}/`)) continue;
        await writeAtomically(path.join(dir, image.fileName), image.bytes);
      }
      const html = `${base}.html`;
      const text = `${base}.txt`;
      await writeAtomically(html, message.html);
      await writeAtomically(text, message.text);
      return { html, text, ...(images.length > 0 ? { images: images.length } : {}) };
    },
  };
}
