// The client's methods for deviations: one deviation, its download, metadata in batches, comments, journals and
// literature; each goes through its catalogue entry.
import { operation } from "../catalogue.ts";
import type { PageIterator } from "../transport.ts";
import {
  type Comment,
  CommentSchema,
  type Deviation,
  type DeviationContent,
  DeviationContentSchema,
  DeviationSchema,
  type DeviationWriteResult,
  DeviationWriteResultSchema,
  type Download,
  DownloadSchema,
  type Metadata,
  MetadataSchema,
  type WhofavedEntry,
  WhofavedEntrySchema,
} from "../types.ts";
import type { ClientBase } from "./core.ts";
import { definedOnly, joinExpand, journalForm, journalUpdateForm, licenseForm, list, literatureForm, splitList } from "./forms.ts";
import type {
  CallOptions,
  CommentListParams,
  DeviationEdit,
  Expand,
  JournalCreate,
  JournalFields,
  LiteratureCreate,
  LiteratureFields,
  Mature,
  MetadataBatch,
  MetadataExt,
  OffsetListOptions,
  WithSession,
} from "./params.ts";

/** The deviation methods of the client, mixed into DaClient (src/api/client.ts). */
export function DeviationMethods<B extends ClientBase>(Base: B) {
  return class extends Base {
    // ---- deviations ---------------------------------------------------------------------------------
    deviation(deviationid: string, params: { expand?: readonly Expand[] } & WithSession & CallOptions = {}): Promise<Deviation> {
      const { signal, maxWaitMs, once, ...rest } = params;
      return this.get(
        "deviation.get",
        { deviationid, with_session: rest.with_session, expand: joinExpand(rest.expand) },
        DeviationSchema,
        definedOnly({ signal, maxWaitMs, once }),
      );
    }

    deviationContent(deviationid: string, params: Mature = {}): Promise<DeviationContent> {
      return this.get("deviation.content", { deviationid, ...params }, DeviationContentSchema);
    }

    /** The original file's signed URL (~10 min). Counts against the account's weekly download quota. */
    deviationDownload(deviationid: string, params: Mature = {}): Promise<Download> {
      return this.get("deviation.download", { deviationid, ...params }, DownloadSchema);
    }

    /**
     * Metadata for any number of ids, one request per batch (50 ids, or 10 when any ext_* is set), yielded
     * per batch in the caller's order. Duplicate ids are sent once.
     */
    async *deviationMetadata(deviationids: readonly string[], params: MetadataExt & Mature & CallOptions = {}): AsyncGenerator<MetadataBatch, void, undefined> {
      const op = operation("deviation.metadata");
      const { signal, maxWaitMs, ...query } = params;
      const withExt = Object.entries(query).some(([k, v]) => k.startsWith("ext_") && v === true);
      const size = withExt ? (op.batch?.maxWithExt ?? 10) : (op.batch?.max ?? 50);
      const unique = [...new Set(deviationids)];
      for (let i = 0; i < unique.length; i += size) {
        const ids = unique.slice(i, i + size);
        // Each answer read on its own: one unreadable entry is recorded and counts as missing (docs/service-behaviour.md#tolerant-reading).
        const body = await this.getItems("deviation.metadata", { ...query, deviationids: ids }, "metadata", MetadataSchema, { signal, maxWaitMs });
        const byId = new Map(body.map((m) => [m.deviationid.toUpperCase(), m]));
        const metadata: Metadata[] = [];
        const missing: string[] = [];
        for (const id of ids) {
          const m = byId.get(id.toUpperCase());
          if (m) metadata.push(m);
          else missing.push(id);
        }
        yield { ids, metadata, missing };
      }
    }

    /** All batches of deviationMetadata, flattened, in the caller's order. */
    async deviationMetadataAll(deviationids: readonly string[], params: MetadataExt & Mature & CallOptions = {}): Promise<Metadata[]> {
      const all: Metadata[] = [];
      for await (const batch of this.deviationMetadata(deviationids, params)) all.push(...batch.metadata);
      return all;
    }

    whofaved(deviationid: string, params: { expand?: readonly Expand[] } & Mature & OffsetListOptions = {}): PageIterator<WhofavedEntry> {
      const { expand, mature_content, ...list } = params;
      return this.offset("deviation.whofaved", { deviationid, expand: joinExpand(expand), mature_content }, WhofavedEntrySchema, list);
    }

    // ---- comments -----------------------------------------------------------------------------------
    deviationComments(deviationid: string, params: CommentListParams & OffsetListOptions = {}): PageIterator<Comment> {
      const { list, rest } = splitList(params);
      return this.offset("comments.deviation", { deviationid, ...rest }, CommentSchema, list);
    }

    profileComments(username: string, params: CommentListParams & OffsetListOptions = {}): PageIterator<Comment> {
      const { list, rest } = splitList(params);
      return this.offset("comments.profile", { username, ...rest }, CommentSchema, list);
    }

    statusComments(statusid: string, params: CommentListParams & OffsetListOptions = {}): PageIterator<Comment> {
      const { list, rest } = splitList(params);
      return this.offset("comments.status", { statusid, ...rest }, CommentSchema, list);
    }

    /** Siblings of a comment; each page's `raw.context` holds the parent and the commented item (with ext_item). */
    commentSiblings(commentid: string, params: { ext_item?: boolean } & Mature & OffsetListOptions = {}): PageIterator<Comment> {
      const { list, rest } = splitList(params);
      return this.offset("comments.siblings", { commentid, ...rest }, CommentSchema, list);
    }

    // ---- writes: comments (scopes: browse, comment.post) --------------------------------------------
    /** Scopes: browse, comment.post. `commentid` replies to that comment. */
    commentPostDeviation(deviationid: string, params: { body: string; commentid?: string }): Promise<Comment> {
      return this.get("comments.post.deviation", { deviationid, ...params }, CommentSchema);
    }

    /** Scopes: browse, comment.post. */
    commentPostProfile(username: string, params: { body: string; commentid?: string }): Promise<Comment> {
      return this.get("comments.post.profile", { username, ...params }, CommentSchema);
    }

    /** Scopes: browse, comment.post. */
    commentPostStatus(statusid: string, params: { body: string; commentid?: string }): Promise<Comment> {
      return this.get("comments.post.status", { statusid, ...params }, CommentSchema);
    }

    // ---- writes: journals, literature, deviations (scope: user.manage; edit: stash + publish) -------
    /** Scope: user.manage. */
    journalCreate(fields: JournalCreate): Promise<DeviationWriteResult> {
      const { body, embedded_image_deviation_id, cover_image_deviation_id, ...rest } = fields;
      return this.get(
        "deviation.journal.create",
        { body, embedded_image_deviation_id, cover_image_deviation_id, ...journalForm(rest) },
        DeviationWriteResultSchema,
      );
    }

    /**
     * Scope: user.manage. The service clears every field left empty (except the cover), so this takes the
     * CURRENT fields and the changes and sends the merged whole. The cover is kept unless `changes` sets it:
     * a new id replaces it, `null` sends `reset_cover_image_deviation_id=true`.
     */
    journalUpdate(deviationid: string, current: JournalFields, changes: Partial<JournalFields>): Promise<DeviationWriteResult> {
      return this.get("deviation.journal.update", { deviationid, ...journalUpdateForm(current, changes) }, DeviationWriteResultSchema);
    }

    /** Scope: user.manage. */
    literatureCreate(fields: LiteratureCreate): Promise<DeviationWriteResult> {
      const { body, description, embedded_image_deviation_id, ...rest } = fields;
      return this.get("deviation.literature.create", { body, description, embedded_image_deviation_id, ...literatureForm(rest) }, DeviationWriteResultSchema);
    }

    /**
     * Scope: user.manage. Null or empty values clear fields on the service, so this takes the CURRENT fields
     * and the changes and sends the merged whole.
     */
    literatureUpdate(deviationid: string, current: LiteratureFields, changes: Partial<LiteratureFields>): Promise<DeviationWriteResult> {
      return this.get("deviation.literature.update", { deviationid, ...literatureForm({ ...current, ...definedOnly(changes) }) }, DeviationWriteResultSchema);
    }

    /** Scopes: stash, publish. Sends only the fields given (the service documents no clearing rule for edit). */
    deviationEdit(deviationid: string, fields: DeviationEdit): Promise<DeviationWriteResult> {
      const { license, tags, galleryids, mature_classification, ...rest } = fields;
      return this.get(
        "deviation.edit",
        {
          deviationid,
          ...rest,
          ...(license ? licenseForm(license) : {}),
          tags: list(tags),
          galleryids: list(galleryids),
          mature_classification: list(mature_classification),
        },
        DeviationWriteResultSchema,
      );
    }
  };
}
