// Keys for separate purposes derived from dvault's one secret key (src/secret-key.ts) with HKDF-SHA256, each
// under a label of its own, so no derived key can stand in for another or for the secret key itself.
import { hkdfSync } from "node:crypto";

/** A 32-byte key for the purpose `label` names (e.g. "dvault token encryption v1"). */
export function deriveKey(secretKey: Buffer, label: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secretKey, Buffer.alloc(0), label, 32));
}
