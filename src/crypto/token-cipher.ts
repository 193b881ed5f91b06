// Encrypts tokens at rest (AES-256-GCM) and fingerprints refresh tokens for compare-and-swap.
//
// Envelope, version 1:  0x01 | key id (4) | IV (12, random) | GCM tag (16) | ciphertext
// The additional authenticated data binds each envelope to its row and column, so a ciphertext copied
// to another account or into another field fails to open instead of quietly becoming that token.
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { EXIT_NEEDS_LOGIN, UserError } from "../errors.ts";
import { deriveKey } from "./derive-key.ts";
import type { SecretKey } from "../secret-key.ts";

const VERSION = 1;
const KEY_ID_LENGTH = 4;
const IV_LENGTH = 12;
const TAG_LENGTH = 16;
const HEADER_LENGTH = 1 + KEY_ID_LENGTH + IV_LENGTH + TAG_LENGTH;

export type TokenField = "access_token" | "refresh_token";
export type TokenAad = { accountId: number; field: TokenField };

/**
 * The stored tokens were written under another key: nothing dvault can do but say which key it used. Exit code 4
 * (src/errors.ts EXIT_NEEDS_LOGIN), as for any account that must log in again, which is one of its two fixes.
 */
export class WrongSecretKeyError extends UserError {
  constructor(readonly keySource: string) {
    super(
      `cannot decrypt stored tokens: ${keySource} is not the key they were encrypted with; restore the key or log in again with \`dvault auth login\``,
      EXIT_NEEDS_LOGIN,
    );
    this.name = "WrongSecretKeyError";
  }
}

/** The key matches but the envelope does not open: damaged, or moved to another row or column. */
export class CorruptTokenError extends UserError {
  constructor(aad: TokenAad) {
    super(
      `the stored ${aad.field.replace("_", " ")} of account #${aad.accountId} is damaged or does not belong to that account; ` +
        "log in again with `dvault auth login`",
    );
    this.name = "CorruptTokenError";
  }
}

/** Words naming the key in use, for the wrong-key message. */
export function describeKeySource(secret: SecretKey): string {
  if (secret.source === "env") return "DVAULT_SECRET_KEY";
  const file = `DVAULT_SECRET_KEY or the key file ${secret.path ?? "(unknown path)"}`;
  // A key file this process made, none being there: the key the tokens need is elsewhere (restored over it, it works).
  return secret.created ? `${file}, made just now because none was there` : file;
}

export class TokenCipher {
  private readonly encKey: Buffer;
  private readonly fingerprintKey: Buffer;
  private readonly keyId: Buffer;
  /** Words naming the key in use (describeKeySource), for what a person reads. */
  readonly keySource: string;

  constructor(secret: SecretKey) {
    if (secret.key.length !== 32) throw new Error("the token key must be 32 bytes");
    // Separate keys per purpose, so the fingerprints say nothing about the encryption key.
    this.encKey = deriveKey(secret.key, "dvault token encryption v1");
    this.fingerprintKey = deriveKey(secret.key, "dvault refresh-token fingerprint v1");
    this.keyId = deriveKey(secret.key, "dvault key id v1").subarray(0, KEY_ID_LENGTH);
    this.keySource = describeKeySource(secret);
  }

  encrypt(plaintext: string, aad: TokenAad): Buffer {
    const iv = randomBytes(IV_LENGTH);
    const cipher = createCipheriv("aes-256-gcm", this.encKey, iv, { authTagLength: TAG_LENGTH });
    cipher.setAAD(aadBytes(aad));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), this.keyId, iv, cipher.getAuthTag(), body]);
  }

  decrypt(envelope: Uint8Array, aad: TokenAad): string {
    const buf = Buffer.from(envelope.buffer, envelope.byteOffset, envelope.byteLength);
    if (buf.length < HEADER_LENGTH || buf[0] !== VERSION) throw new CorruptTokenError(aad);
    const keyId = buf.subarray(1, 1 + KEY_ID_LENGTH);
    if (!timingSafeEqual(keyId, this.keyId)) throw new WrongSecretKeyError(this.keySource);
    const ivEnd = 1 + KEY_ID_LENGTH + IV_LENGTH;
    const iv = buf.subarray(1 + KEY_ID_LENGTH, ivEnd);
    const tag = buf.subarray(ivEnd, HEADER_LENGTH);
    const decipher = createDecipheriv("aes-256-gcm", this.encKey, iv, { authTagLength: TAG_LENGTH });
    decipher.setAAD(aadBytes(aad));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(buf.subarray(HEADER_LENGTH)), decipher.final()]).toString("utf8");
    } catch {
      throw new CorruptTokenError(aad);
    }
  }

  /** Whether an envelope was sealed under this key (read from its key id; nothing is decrypted). */
  sealedWithThisKey(envelope: Uint8Array): boolean {
    const buf = Buffer.from(envelope.buffer, envelope.byteOffset, envelope.byteLength);
    return buf.length >= HEADER_LENGTH && timingSafeEqual(buf.subarray(1, 1 + KEY_ID_LENGTH), this.keyId);
  }

  /** HMAC-SHA256 (hex) of a refresh token: equal tokens, equal fingerprints; the token cannot be recovered. */
  fingerprint(token: string): string {
    return createHmac("sha256", this.fingerprintKey).update(token, "utf8").digest("hex");
  }
}

function aadBytes({ accountId, field }: TokenAad): Buffer {
  return Buffer.from(`dvault/v${VERSION}/account/${accountId}/${field}`, "utf8");
}
