// The HTTP layer: one got instance (src/api/http/got-client.ts) that owns the API root, headers, timeouts,
// pacing (via the shared Redis pacer), bearer auth with one refresh after a 401, retry policy and the mapping
// of failures to ApiError; here, reading the answers. It implements ApiTransport; the typed client never sees
// got, tokens or the pacer.
import type { Options, Response } from "got";
import { z } from "zod";
import { describeBound, trippedBound, type BoundTripped } from "./body-guard.ts";
import { ApiError, malformedError, networkError } from "./errors.ts";
import { newCallState, sleep } from "./http/call-state.ts";
import { createApiGot } from "./http/got-client.ts";
import {
  DEFAULT_RETRY,
  encodeParams,
  newTransportStats,
  type HttpTransport,
  type HttpTransportOptions,
  type RetryPolicy,
  type TransportStats,
} from "./http/options.ts";
import { paginateCursor, paginateOffset, TOO_LARGE_READINGS } from "./paginate.ts";
import { issueText, subjectOf, type PageIO } from "./paginate/read-page.ts";
import type { ApiRequest } from "./transport.ts";

export {
  API_PATH,
  DEFAULT_MINOR_VERSION,
  DEFAULT_RETRY,
  DEFAULT_USER_AGENT,
  encodeParams,
  newTransportStats,
  type HttpTransport,
  type HttpTransportOptions,
  type RetryPolicy,
  type TransportStats,
} from "./http/options.ts";

export function createHttpTransport(options: HttpTransportOptions): HttpTransport {
  const { tokens, log } = options;
  const retry: RetryPolicy = { ...DEFAULT_RETRY, ...options.retry };
  const defaultMaxWaitMs = options.maxWaitMs ?? 5000;
  const stats: TransportStats = newTransportStats();
  // This transport's own counters (per-run bookkeeping reads deltas of them) and the shared totals.
  const sinks = options.totals ? [stats, options.totals] : [stats];

  const count = (operation: string, status: string) => {
    for (const sink of sinks) {
      const byStatus = (sink.calls[operation] ??= {});
      byStatus[status] = (byStatus[status] ?? 0) + 1;
    }
  };
  const backoff = (n: number) => retry.baseDelayMs * 2 ** (n - 1) * (1 + 0.2 * Math.random());
  const newState = (req: ApiRequest) => newCallState(req, tokens, defaultMaxWaitMs);

  const maxBodyBytes = options.maxBodyBytes ?? 32 * 2 ** 20;
  const client = createApiGot({ options, retry, maxBodyBytes, sinks, count, backoff });

  /** The body as JSON. A body that is not JSON (cut short, a proxy's page) is a transient failure. */
  function readJson(response: Response, req: ApiRequest): unknown {
    const text = String(response.body ?? "");
    try {
      return JSON.parse(text);
    } catch {
      const snippet = text.replace(/\s+/g, " ").trim().slice(0, 60);
      throw malformedError({ operation: req.operation, status: response.statusCode, account: tokens.identity().account, detail: `not JSON: "${snippet}"` });
    }
  }

  async function report(req: ApiRequest, subject: string, detail: string, raw: unknown): Promise<void> {
    const account = tokens.identity().account;
    for (const sink of sinks) sink.unreadable[subject ? "items" : "responses"]++;
    log.warn({ operation: req.operation, subject: subject || "(response)", detail, account }, "unreadable answer from the service: kept and skipped");
    await options.unreadable?.record({
      operation: req.operation,
      request: { method: req.method, path: req.path, params: { ...req.query, ...req.form } },
      subject,
      detail,
      raw,
      account,
    });
  }

  /**
   * One call whose body holds a list under `key`: each item read on its own, the unreadable ones recorded
   * and left out (docs/service-behaviour.md#tolerant-reading). The envelope is read like request()'s body.
   */
  async function requestItems<S extends z.ZodType>(
    req: ApiRequest,
    key: string,
    itemSchema: S,
  ): Promise<{ body: Record<string, unknown>; items: z.infer<S>[] }> {
    const envelope = z.looseObject({ [key]: z.array(z.unknown()) });
    const body = (await request(req, envelope)) as Record<string, unknown>;
    const items: z.infer<S>[] = [];
    for (const [index, item] of (body[key] as unknown[]).entries()) {
      const parsed = itemSchema.safeParse(item);
      if (parsed.success) items.push(parsed.data);
      else await report(req, subjectOf(item, index), issueText(parsed.error), item);
    }
    return { body, items };
  }

  /**
   * One call whose body must fit `schema`. A readable JSON answer of the wrong shape is read again once
   * (GET only); a second misfit is recorded and final for that request. A write is never sent twice: its
   * unreadable answer is recorded and final at once (it may have happened).
   */
  async function request<S extends z.ZodType>(req: ApiRequest, schema: S): Promise<z.infer<S>> {
    let tooLarge = 0;
    for (let reading = 1; ; reading++) {
      let response: Response;
      try {
        response = await client(relativePath(req), gotOptions(req));
      } catch (err) {
        const mapped = mapCancel(err, req);
        // Past the byte cap: asked for again a few times with backoff (GET only), then recorded and final.
        const received = io.tooLarge(err);
        if (mapped instanceof ApiError && received !== undefined) {
          tooLarge++;
          if (req.method === "GET" && tooLarge < TOO_LARGE_READINGS) {
            await sleep(backoff(tooLarge), req.signal);
            continue;
          }
          await report(req, "", mapped.detail ?? "response too large", { dvault_unread: "the body passed the byte cap", maxBytes: maxBodyBytes, received });
          throw malformedError({ operation: req.operation, account: tokens.identity().account, detail: mapped.detail ?? "response too large", final: true });
        }
        throw mapped;
      }
      const json = readJson(response, req);
      const parsed = schema.safeParse(json);
      if (parsed.success) return parsed.data;
      const detail = issueText(parsed.error);
      if (reading === 1 && req.method === "GET") continue;
      await report(req, "", detail, json);
      throw malformedError({ operation: req.operation, status: response.statusCode, account: tokens.identity().account, detail, final: true });
    }
  }

  function gotOptions(req: ApiRequest) {
    const form = req.method === "POST" ? encodeParams(req.form).toString() : undefined;
    return {
      method: req.method,
      searchParams: encodeParams(req.query),
      ...(form === undefined ? {} : { body: form, headers: { "content-type": "application/x-www-form-urlencoded" } }),
      context: { state: newState(req) },
      ...(req.signal ? { signal: req.signal } : {}),
    } as const;
  }

  const relativePath = (req: ApiRequest) => req.path.replace(/^\/+/, "");

  /**
   * A request the body guard cancelled becomes the error of what tripped: past the byte cap, an answer
   * dvault cannot read ("response too large"); under the throughput floor, a transient timeout. Anything
   * else is returned as it is.
   */
  function mapCancel(err: unknown, req: ApiRequest): Error {
    const why: BoundTripped | undefined = trippedBound((err as { options?: Options }).options);
    if (!why) return err instanceof Error ? err : new Error(String(err));
    const account = tokens.identity().account;
    if (why.kind === "too_large") return malformedError({ operation: req.operation, account, detail: describeBound(why) });
    return networkError({ operation: req.operation, code: "ETIMEDOUT", account, detail: describeBound(why) });
  }

  const io: PageIO = {
    client,
    relativePath,
    gotOptions,
    freshContext: (req) => ({ state: newState(req) }),
    readJson,
    report,
    mapError: mapCancel,
    tooLarge: (err) => {
      const why = trippedBound((err as { options?: Options }).options);
      return why?.kind === "too_large" ? why.bytes : undefined;
    },
    backoff,
    maxBodyBytes,
  };

  return {
    stats,
    request,
    requestItems,
    paginateOffset: (req, itemSchema, pagingOptions) => paginateOffset(io, req, itemSchema, pagingOptions),
    paginateCursor: (req, itemSchema, pagingOptions) => paginateCursor(io, req, itemSchema, pagingOptions),
  };
}
