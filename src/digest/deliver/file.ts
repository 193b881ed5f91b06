// The file channel: one .html and one .txt per digest (or alert) in DVAULT_DIGEST_DIR, named after its
// idempotency key, written to a temporary name and renamed, so a retry rewrites the same two files.
import { randomBytes } from "node:crypto";
import { mkdir, open, rename, unlink } from "node:fs/promises";
import path from "node:path";
import type { Deliverer, DeliveryReceipt, OutgoingMessage } from "../types.ts";

async function writeAtomically(file: string, content: string): Promise<void> {
  const tmp = `${file}.${randomBytes(4).toString("hex")}.tmp`;
  const handle = await open(tmp, "w", 0o644);
  try {
    await handle.writeFile(content, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
}

export function fileDeliverer(dir: string): Deliverer {
  return {
    channel: "file",
    async deliver(message: OutgoingMessage): Promise<DeliveryReceipt> {
      await mkdir(dir, { recursive: true });
      const base = path.join(dir, message.fileBase.replace(/[^A-Za-z0-9._-]/g, "_"));
      const html = `${base}.html`;
      const text = `${base}.txt`;
      await writeAtomically(html, message.html);
      await writeAtomically(text, message.text);
      return { html, text };
    },
  };
}
