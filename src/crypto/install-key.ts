// The install's secret key as the checks read it (status, the runs before they claim an account's work): the key that
// exists (DVAULT_SECRET_KEY or the key file, src/secret-key.ts), never one made now; or why there is none to read with
// (no key found, a key file that cannot be read or holds no key), said as the reason an account's tokens cannot be used.
import type { Config } from "../config.ts";
import { TokenCipher } from "./token-cipher.ts";
import { existingSecretKey, keyPlaces } from "../secret-key.ts";

/** The key to read the accounts' tokens with, or why the stored tokens cannot be read at all. */
export type InstallKey = { cipher: TokenCipher } | { none: string };

export function installKey(config: Config): InstallKey {
  const where = config.secretKey ? "DVAULT_SECRET_KEY" : keyPlaces(config);
  try {
    const secret = existingSecretKey(config);
    if (secret) return { cipher: new TokenCipher(secret) };
    return { none: `its stored tokens cannot be read, since no key was found in ${where} (restore that key, or log in again)` };
  } catch (err) {
    // A key file that cannot be read, or holds no key: its own message says which and what to do.
    const message = (err instanceof Error ? err.message : String(err)).replace(/\.$/, "");
    return { none: `its stored tokens cannot be read: ${message}` };
  }
}

/**
 * The reason an account's tokens cannot be used when this install's key is not the one that sealed them (a key file
 * or config folder lost in a move): `keySource` names the key it has (token-cipher.ts describeKeySource).
 */
export function anotherKeyReason(keySource: string): string {
  return `its stored tokens were encrypted with another key than ${keySource} (restore that key, or log in again)`;
}

/**
 * Why this install cannot use an account's stored tokens, or undefined when it can (or there are none): they were
 * sealed under another key (read from their key id, nothing decrypted), or the install has no key it can read.
 */
export function unreadableTokens(row: { accessTokenEnc: Uint8Array | null; refreshTokenEnc: Uint8Array | null }, key: InstallKey): string | undefined {
  const sealed = [row.accessTokenEnc, row.refreshTokenEnc].filter((e): e is Uint8Array => e !== null && e.length > 0);
  if (sealed.length === 0) return undefined;
  if ("cipher" in key) {
    const cipher = key.cipher;
    return sealed.every((e) => cipher.sealedWithThisKey(e)) ? undefined : anotherKeyReason(cipher.keySource);
  }
  return key.none;
}
