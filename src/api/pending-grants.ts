// Rotated grants the service has answered and the database has not taken yet. The service spends a refresh token on
// receipt (docs/service-behaviour.md#refresh-single-use), so from the moment its answer arrives the new grant exists
// nowhere else: it is kept here, sealed as the accounts table holds it (src/api/token-session.ts seal), until a
// write of the row succeeds. A small file per grant in dvault's config folder, beside the key file (mode 0600,
// written to a temporary name, fsynced, renamed, its folder fsynced): a database that turns read-only, fails over
// or fills its disk in that window no longer loses the grant, and whoever reads the account next stores it
// (src/api/token-refresh.ts); a host that cannot read this folder is kept from sending the spent token by the
// coordination store (token-refresh.ts spentKey). The file holds ciphertexts bound to their account and column and
// the refresh tokens' fingerprints, never a token; `dvault backup` copies only the key file of that folder
// (src/backup/backup.ts).
import { readdir, readFile, unlink } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { makeDirs } from "../make-dirs.ts";
import { writeFileAtomically } from "../write-atomically.ts";
import type { RotatedTokens } from "./token-store.ts";

/** One answered rotation: the row's refresh token it spent (by fingerprint) and what the service gave for it. */
export type PendingGrant = { accountId: number; oldFingerprint: string; rotated: RotatedTokens };

const FINGERPRINT = /^[0-9a-f]{64}$/;
const bytes = z.string().transform((b64) => Buffer.from(b64, "base64"));
const date = z.string().transform((iso) => new Date(iso));

const PendingGrantFileSchema = z.object({
  version: z.literal(1),
  accountId: z.number().int().positive(),
  oldFingerprint: z.string().regex(FINGERPRINT),
  accessTokenEnc: bytes,
  accessIssuedAt: date,
  accessExpiresAt: date,
  refreshTokenEnc: bytes.nullable(),
  refreshTokenFingerprint: z.string().regex(FINGERPRINT).nullable(),
  refreshIssuedAt: date.nullable(),
  scopes: z.array(z.string()),
  now: date,
});

/** A grant's file name: the account id and the start of the spent token's fingerprint (one answer per spent token). */
function fileName(accountId: number, oldFingerprint: string): string {
  return `${accountId}-${oldFingerprint.slice(0, 16)}.json`;
}

function serialize({ accountId, oldFingerprint, rotated }: PendingGrant): string {
  const b64 = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString("base64"));
  return `${JSON.stringify({
    version: 1,
    accountId,
    oldFingerprint,
    accessTokenEnc: b64(rotated.accessTokenEnc),
    accessIssuedAt: rotated.accessIssuedAt.toISOString(),
    accessExpiresAt: rotated.accessExpiresAt.toISOString(),
    refreshTokenEnc: b64(rotated.refreshTokenEnc),
    refreshTokenFingerprint: rotated.refreshTokenFingerprint,
    refreshIssuedAt: rotated.refreshIssuedAt?.toISOString() ?? null,
    scopes: rotated.scopes,
    now: rotated.now.toISOString(),
  })}\n`;
}

/** The grant a file's JSON holds; undefined for anything else. */
function grantOf(json: unknown): PendingGrant | undefined {
  const parsed = PendingGrantFileSchema.safeParse(json);
  if (!parsed.success) return undefined;
  const { version: _, accountId, oldFingerprint, ...rotated } = parsed.data;
  return { accountId, oldFingerprint, rotated };
}

/** Where a grant was kept: its file, or this process's memory alone when the file could not be written (and why). */
export type KeptAt = { file: string } | { memoryOnly: string };

/**
 * The folder of pending grants, and this process's memory of the ones it kept: a grant whose file could not be
 * written (a read-only config folder) is still stored by this process's next read of the account.
 */
export class PendingGrants {
  private readonly inMemory = new Map<string, PendingGrant>();

  constructor(readonly dir: string) {}

  /** Keeps the grant; never throws (the caller goes on to store it in the database either way). */
  async keep(grant: PendingGrant): Promise<KeptAt> {
    const name = fileName(grant.accountId, grant.oldFingerprint);
    this.inMemory.set(name, grant);
    const file = path.join(this.dir, name);
    try {
      await makeDirs(this.dir, 0o700);
      await writeFileAtomically(file, serialize(grant), { mode: 0o600, syncFolder: true });
      return { file };
    } catch (err) {
      return { memoryOnly: err instanceof Error ? err.message : String(err) };
    }
  }

  /** The account's pending grants: this process's and every file of the folder (another process's included). */
  async find(accountId: number): Promise<PendingGrant[]> {
    const found = new Map([...this.inMemory].filter(([, g]) => g.accountId === accountId));
    const prefix = `${accountId}-`;
    // No folder (nothing ever waited), or one this process cannot read (it could not have written there either).
    const names = await readdir(this.dir).catch(() => [] as string[]);
    for (const name of names) {
      if (!name.startsWith(prefix) || !name.endsWith(".json") || found.has(name)) continue;
      const grant = await readFile(path.join(this.dir, name), "utf8")
        .then((text) => grantOf(JSON.parse(text)))
        .catch(() => undefined);
      // A file of another shape, or not named for what it holds, is not one of ours: left alone.
      if (grant && grant.accountId === accountId && fileName(accountId, grant.oldFingerprint) === name) found.set(name, grant);
    }
    return [...found.values()];
  }

  /** Whether this process kept the grant (its own refresh answered it, for this install's database). */
  keptHere(grant: Pick<PendingGrant, "accountId" | "oldFingerprint">): boolean {
    return this.inMemory.has(fileName(grant.accountId, grant.oldFingerprint));
  }

  /**
   * Forgets a grant once the row holds it, or has moved past one this process kept (src/api/token-refresh.ts
   * adoptPending): its file goes, whoever wrote it. Never throws: a file left behind names a spent token the row no
   * longer holds, so it is never stored, only read again.
   */
  async drop(grant: Pick<PendingGrant, "accountId" | "oldFingerprint">): Promise<void> {
    const name = fileName(grant.accountId, grant.oldFingerprint);
    this.inMemory.delete(name);
    await unlink(path.join(this.dir, name)).catch(() => undefined);
  }
}
