// The client's plumbing: a catalogue operation and its parameters become one request, one page iterator
// or one list of items read each on its own, over any ApiTransport. The areas (src/api/client/*.ts) add
// the typed methods.
import { z } from "zod";
import { expandPath, operation, type Operation, type OperationId, pathParams, type ResponseOf } from "../catalogue.ts";
import type { ApiRequest, ApiTransport, PageIterator, Params } from "../transport.ts";
import type { CallOptions, CursorListOptions, OffsetListOptions } from "./params.ts";

/** Page size when the catalogue knows no maximum: browse endpoints cut larger pages to 24 anyway (docs/service-behaviour.md#browse-limit-cap). */
export const DEFAULT_PAGE_SIZE = 24;

export type DaClientOptions = {
  /** Which token the transport sends; decides the `mature_content` default. */
  tokenKind?: "user" | "client";
  /** Overrides the `mature_content` default (true for user tokens, not sent for client tokens). */
  matureContent?: boolean;
};

/** The schema `call(id)` validates the body of `id` with: the one in its catalogue entry. */
export function responseSchema<Id extends OperationId>(id: Id): z.ZodType<ResponseOf<Id>> {
  // The entry of `id` carries this schema (src/api/catalogue.ts types ResponseOf from it).
  return operation(id).response as z.ZodType<ResponseOf<Id>>;
}

/** What every area of the client builds on: the transport, the mature default, and one request per shape. */
export class ClientCore {
  protected readonly matureDefault: boolean | undefined;

  constructor(
    protected readonly transport: ApiTransport,
    options: DaClientOptions = {},
  ) {
    this.matureDefault = options.matureContent ?? ((options.tokenKind ?? "user") === "user" ? true : undefined);
  }

  /**
   * Any catalogue operation, one request: placeholders are filled from `params`, everything else goes to
   * the query (GET) or the form body (POST) as given (no defaults added). Listings return one page.
   */
  async call<Id extends OperationId>(id: Id, params: Params = {}, options: CallOptions = {}): Promise<ResponseOf<Id>> {
    const op = operation(id);
    return this.transport.request(this.build(op, params, options), responseSchema(id));
  }

  /**
   * Any catalogue operation as the service answered it (`dvault api`): one body, unvalidated, with the same
   * defaults as the typed methods (`mature_content` where the endpoint takes it and `params` does not say).
   */
  raw(id: OperationId, params: Params = {}, options: CallOptions = {}): Promise<unknown> {
    const op = operation(id);
    return this.transport.request(this.build(op, this.withDefaults(op, params), options), z.unknown());
  }

  /**
   * Every item of a listing, page after page by its own paging (offset or cursor), each as the service sent it;
   * `limit`, `offset` and `cursor` in `params` set the page size and where the walk starts.
   */
  async rawItems(id: OperationId, params: Params = {}, options: CallOptions = {}): Promise<unknown[]> {
    const op = operation(id);
    const { limit, offset, cursor, ...rest } = params;
    const req = this.build(op, this.withDefaults(op, rest), options);
    const size = limit === undefined || limit === null ? undefined : Number(limit);
    const pages =
      op.paging === "offset"
        ? this.transport.paginateOffset(req, z.unknown(), {
            limit: size ?? op.maxLimit ?? DEFAULT_PAGE_SIZE,
            ...(op.itemsKey ? { itemsKey: op.itemsKey } : {}),
            ...(offset !== undefined && offset !== null ? { startOffset: Number(offset) } : {}),
          })
        : op.paging === "cursor"
          ? this.transport.paginateCursor(req, z.unknown(), {
              itemsKey: op.itemsKey === "items" ? "items" : "results",
              ...((size ?? op.maxLimit) !== undefined ? { limit: size ?? op.maxLimit } : {}),
              ...(cursor !== undefined && cursor !== null ? { startCursor: String(cursor) } : {}),
            })
          : undefined;
    if (!pages) throw new Error(`${id} is not a listing (paging: none)`);
    const items: unknown[] = [];
    for await (const page of pages) items.push(...page.items);
    return items;
  }

  /** ApiRequest for `op`: path placeholders from `params`, the rest as query (GET) or form (POST). */
  protected build(op: Operation, params: Params, options: CallOptions): ApiRequest {
    const inPath = new Set(pathParams(op.path));
    const rest: Params = {};
    for (const [key, value] of Object.entries(params)) {
      if (!inPath.has(key) && value !== undefined) rest[key] = value;
    }
    return {
      operation: op.id,
      method: op.method,
      path: expandPath(op.path, params),
      ...(op.method === "GET" ? { query: rest } : { form: rest }),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.maxWaitMs !== undefined ? { maxWaitMs: options.maxWaitMs } : {}),
      ...(options.once ? { once: true } : {}),
    };
  }

  /** Adds `mature_content` where the endpoint takes it and the caller did not say. */
  protected withDefaults(op: Operation, params: Params): Params {
    if (!op.matureContent || params.mature_content !== undefined || this.matureDefault === undefined) return params;
    return { ...params, mature_content: this.matureDefault };
  }

  /** One request of a non-listing operation (any method), validated by `schema`. */
  protected get<S extends z.ZodType>(id: OperationId, params: Params, schema: S, options: CallOptions = {}): Promise<z.infer<S>> {
    const op = operation(id);
    return this.transport.request(this.build(op, this.withDefaults(op, params), options), schema);
  }

  /** One request whose body lists items under `key`, each read on its own (unreadable ones recorded, left out). */
  protected async getItems<S extends z.ZodType>(id: OperationId, params: Params, key: string, item: S, options: CallOptions = {}): Promise<z.infer<S>[]> {
    const op = operation(id);
    return (await this.transport.requestItems(this.build(op, this.withDefaults(op, params), options), key, item)).items;
  }

  protected offset<S extends z.ZodType>(id: OperationId, params: Params, item: S, list: OffsetListOptions): PageIterator<z.infer<S>> {
    const op = operation(id);
    if (op.paging !== "offset") throw new Error(`${id} is not an offset listing (paging: ${op.paging})`);
    const req = this.build(op, this.withDefaults(op, params), list);
    return this.transport.paginateOffset(req, item, {
      limit: list.limit ?? op.maxLimit ?? DEFAULT_PAGE_SIZE,
      ...(op.itemsKey ? { itemsKey: op.itemsKey } : {}),
      ...(list.startOffset !== undefined ? { startOffset: list.startOffset } : {}),
      ...(list.ceiling !== undefined ? { ceiling: list.ceiling } : {}),
    });
  }

  protected cursor<S extends z.ZodType>(id: OperationId, params: Params, item: S, list: CursorListOptions): PageIterator<z.infer<S>> {
    const op = operation(id);
    if (op.paging !== "cursor") throw new Error(`${id} is not a cursor listing (paging: ${op.paging})`);
    const itemsKey = op.itemsKey === "items" ? "items" : "results";
    const limit = list.limit ?? op.maxLimit;
    return this.transport.paginateCursor(this.build(op, this.withDefaults(op, params), list), item, {
      itemsKey,
      ...(limit !== undefined ? { limit } : {}),
      ...(list.startCursor !== undefined ? { startCursor: list.startCursor } : {}),
    });
  }
}

/** The constructor an area's mixin extends (TypeScript requires `any[]` for a mixin's constructor). */
// biome-ignore lint/suspicious/noExplicitAny: the mixin pattern needs exactly this signature
export type ClientBase = new (...args: any[]) => ClientCore;
