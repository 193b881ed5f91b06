// Builds the simulated world a simulator instance serves from its options: the seeded dataset, the clock,
// tokens, the CDN's settings and the download quota, after checking the options that can be wrong.
import { randomBytes } from "node:crypto";
import { createClock } from "./clock.ts";
import { generateDataset, type DatasetOptions } from "./dataset.ts";
import { DEFAULT_CLIENTS, DEFAULT_START_TIME, type SimulatorOptions } from "./options.ts";
import { OFFSET_CEILING } from "./paging.ts";
import { DEFAULT_DOWNLOAD_QUOTA, DownloadQuota } from "./quota.ts";
import { createRng } from "./rng.ts";
import { TokenStore } from "./tokens.ts";
import { VelocityFilter } from "./velocity.ts";
import { buildIndex, type QuotaExhaustion, type SimMode, type SimProfile, type SimWorld } from "./world.ts";

/** A positive number, or null for none (the CDN's bandwidth cap). */
export function positiveOrNull(n: number | undefined): number | null {
  return n !== undefined && Number.isFinite(n) && n > 0 ? n : null;
}

export function createWorld(options: SimulatorOptions): SimWorld {
  const seed = options.seed ?? 1;
  const mode: SimMode = options.mode ?? "current";
  const profile: SimProfile = options.profile ?? "classic";
  if (profile === "2026" && mode !== "current") throw new RangeError(`profile "2026" is the current service: it needs mode "current", got "${mode}"`);
  const offsetCeiling = options.offsetCeiling ?? OFFSET_CEILING;
  if (!Number.isSafeInteger(offsetCeiling) || offsetCeiling < 0) throw new RangeError(`offsetCeiling must be a non-negative integer, got ${offsetCeiling}`);
  const quotaExhaustion: QuotaExhaustion = options.quotaExhaustion ?? "400";
  if (quotaExhaustion !== "400" && quotaExhaustion !== "500") throw new RangeError(`quotaExhaustion is "400" or "500", got ${String(quotaExhaustion)}`);
  const start = options.startTime ?? DEFAULT_START_TIME;
  const clock = createClock(start, options.clockMode ?? "frozen");
  const datasetOptions: DatasetOptions = options.variance === undefined ? (options.dataset ?? {}) : { ...options.dataset, variance: options.variance };
  const data = generateDataset(seed, datasetOptions, start);
  for (const [id, bytes] of Object.entries(options.fileSizes ?? {})) {
    const d = data.deviations.get(id.toUpperCase());
    if (!d?.image) throw new Error(`fileSizes: no simulated deviation ${id} with a file`);
    if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError(`fileSizes: ${id} needs a positive integer size, got ${bytes}`);
    d.image.filesize = bytes;
  }
  const world: SimWorld = {
    mode,
    profile,
    offsetCeiling,
    quotaExhaustion,
    data,
    clock,
    rng: createRng(seed ^ 0x5eed5eed),
    tokens: new TokenStore(clock, options.clients ?? DEFAULT_CLIENTS, options.accessTokenLifetimeS ?? 3600),
    baseUrl: "",
    cdnKey: randomBytes(32),
    cdn: { bytesPerSecond: positiveOrNull(options.cdnBytesPerSecond), ranges: options.cdnRanges ?? true, etagOnPartial: true, weakEtags: false },
    quota: new DownloadQuota(options.downloadQuota ?? DEFAULT_DOWNLOAD_QUOTA),
    velocity: new VelocityFilter(options.velocity),
    index: buildIndex(data),
  };
  return world;
}
