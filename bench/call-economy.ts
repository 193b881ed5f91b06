// What a run's API calls cost against the paging minimum, from the simulator's request log: each logged
// listing request is replayed once against the unchanged simulator to count its items, and the minimum is
// ceil(items / the operation's max limit in src/api/catalogue.ts) per listing, ceil(distinct ids / 50) metadata calls
// (docs/service-behaviour.md#metadata-batch), plus the calls that exist once per item or run at their observed
// number. Shared by bench/api-economy.ts and bench/sync-scale.ts.
import got from "got";
import { CATALOGUE, type Operation } from "../src/api/catalogue.ts";
import type { RequestLogEntry } from "../src/simulator/server.ts";
import { METADATA_BATCH } from "../test/helpers/paging-minimum.ts";
import { API_ROUTE_PREFIX, type BenchEnv } from "./bench-env.ts";

const PAGING_PARAMS = new Set(["offset", "limit", "cursor"]);

export const OPS = new Map<string, Operation>(CATALOGUE.map((op) => [`${op.method} ${API_ROUTE_PREFIX}${op.path}`, op as Operation]));

export type Economy = {
  calls: number;
  listingCalls: number;
  listingMin: number;
  metadataCalls: number;
  metadataMin: number;
  /** Calls that exist once per item (texts, per-deviation comments, …) or once per run (profile, whoami). */
  fixedCalls: number;
  fixedOps: Map<string, number>;
  min: number;
};

async function replayItems(env: BenchEnv, token: string, e: RequestLogEntry, op: Operation): Promise<number> {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(e.query)) for (const one of Array.isArray(v) ? v : [v]) search.append(k, one);
  const body = await got(`${env.sim.url}${e.path}?${search}`, { headers: { authorization: `Bearer ${token}` }, throwHttpErrors: false }).json<
    Record<string, unknown>
  >();
  const items = body[op.itemsKey ?? "results"];
  return Array.isArray(items) ? items.length : 0;
}

export async function economyOf(env: BenchEnv, entries: RequestLogEntry[], token: string): Promise<Economy> {
  const listings = new Map<string, { op: Operation; calls: number; items: number; pageMax: number }>();
  const out: Economy = { calls: entries.length, listingCalls: 0, listingMin: 0, metadataCalls: 0, metadataMin: 0, fixedCalls: 0, fixedOps: new Map(), min: 0 };
  // Distinct ids: metadata asked for twice in one run is a call over the minimum, not part of it.
  const metadataIds = new Set<string>();
  for (const e of entries) {
    const op = OPS.get(`${e.method} ${e.route}`);
    if (op?.batch) {
      out.metadataCalls++;
      const ids = e.query[`${op.batch.param}[]`] ?? e.query[op.batch.param] ?? [];
      for (const id of [ids].flat()) metadataIds.add(id);
      continue;
    }
    if (op && op.paging !== "none") {
      out.listingCalls++;
      const rest = Object.entries(e.query)
        .filter(([k]) => !PAGING_PARAMS.has(k))
        .sort(([a], [b]) => a.localeCompare(b));
      const key = `${e.path}?${JSON.stringify(rest)}`;
      const items = await replayItems(env, token, e, op);
      const g = listings.get(key) ?? { op, calls: 0, items: 0, pageMax: 0 };
      g.calls++;
      g.items += items;
      g.pageMax = Math.max(g.pageMax, items);
      listings.set(key, g);
      continue;
    }
    out.fixedCalls++;
    const name = op?.id ?? e.route.slice(API_ROUTE_PREFIX.length);
    out.fixedOps.set(name, (out.fixedOps.get(name) ?? 0) + 1);
  }
  for (const g of listings.values()) {
    // Without a documented maximum the service fixes the page size: every page it hands out is needed.
    out.listingMin += g.op.maxLimit === undefined ? g.calls : Math.max(1, Math.ceil(g.items / g.op.maxLimit));
  }
  out.metadataMin = Math.ceil(metadataIds.size / METADATA_BATCH);
  out.min = out.listingMin + out.metadataMin + out.fixedCalls;
  return out;
}
