// Notifications and messages of an account (feed, feedback, mentions), stacked or expanded, with their
// subjects as plain ids: an orphaned message whose deviation or user is unknown is still archived.
import type { MessageInput } from "./mirror-input.ts";
import { isoTime, uniqueBy, type UpsertCounts } from "./mirror-rows.ts";
import { sql } from "./kysely.ts";
import { seenAgain, upsertPage } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

export type MessageBox = "feed" | "feedback" | "mentions";
export type MessageSubjectKind = "deviation" | "profile" | "status" | "comment" | "collection" | "gallery";

export class MessageRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Records a page of messages of one box. `changed` counts messages whose read state, orphaned flag or
   * stack size changed, and messages that came back after a removal.
   */
  async upsertMessages(accountId: number, box: MessageBox, messages: readonly MessageInput[], seenAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(messages, (m) => m.messageid).map(messageRow);
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`messageid text, type text, ts timestamptz, stackid text, stack_count integer, is_new boolean, orphaned boolean, originator_userid text, subject_kind message_subject_kind, subject_deviationid text, subject_userid text, subject_statusid text, subject_commentid text, subject_folderid text, html text, raw jsonb`,
      before: sql`
        old AS (
          SELECT m.messageid, m.is_new, m.orphaned, m.stack_count, m.removed_at
          FROM messages m JOIN input USING (messageid) WHERE m.account_id = ${accountId}
        )`,
      upsert: sql`
        INSERT INTO messages AS m (account_id, messageid, box, type, ts, stackid, stack_count, is_new, orphaned,
          originator_userid, subject_kind, subject_deviationid, subject_userid, subject_statusid, subject_commentid,
          subject_folderid, html, raw, first_seen_at, last_seen_at)
        SELECT ${accountId}, messageid, ${box}::message_box, type, ts, stackid, stack_count, is_new, orphaned, originator_userid,
          subject_kind, subject_deviationid, subject_userid, subject_statusid, subject_commentid, subject_folderid,
          html, raw, ${seenAt}, ${seenAt}
        FROM input ORDER BY messageid
        ON CONFLICT (account_id, messageid) DO UPDATE SET
          -- A sighting in feedback or mentions is more specific than the all-messages feed, never the reverse.
          box = CASE WHEN EXCLUDED.box <> 'feed' THEN EXCLUDED.box ELSE m.box END,
          type = COALESCE(EXCLUDED.type, m.type),
          ts = COALESCE(EXCLUDED.ts, m.ts),
          stackid = COALESCE(EXCLUDED.stackid, m.stackid),
          stack_count = COALESCE(EXCLUDED.stack_count, m.stack_count),
          is_new = COALESCE(EXCLUDED.is_new, m.is_new),
          orphaned = COALESCE(EXCLUDED.orphaned, m.orphaned),
          originator_userid = COALESCE(EXCLUDED.originator_userid, m.originator_userid),
          subject_kind = COALESCE(EXCLUDED.subject_kind, m.subject_kind),
          subject_deviationid = COALESCE(EXCLUDED.subject_deviationid, m.subject_deviationid),
          subject_userid = COALESCE(EXCLUDED.subject_userid, m.subject_userid),
          subject_statusid = COALESCE(EXCLUDED.subject_statusid, m.subject_statusid),
          subject_commentid = COALESCE(EXCLUDED.subject_commentid, m.subject_commentid),
          subject_folderid = COALESCE(EXCLUDED.subject_folderid, m.subject_folderid),
          html = COALESCE(EXCLUDED.html, m.html),
          raw = EXCLUDED.raw,
          ${seenAgain("m")}
        RETURNING m.messageid, (m.xmax = 0) AS inserted`,
      using: ["messageid"],
      changed: sql`o.removed_at IS NOT NULL OR (i.is_new IS NOT NULL AND o.is_new IS DISTINCT FROM i.is_new) OR (i.orphaned IS NOT NULL AND o.orphaned IS DISTINCT FROM i.orphaned) OR (i.stack_count IS NOT NULL AND o.stack_count IS DISTINCT FROM i.stack_count)`,
    });
  }

  /** After a complete walk of a box started at `sweepStartedAt`: messages not seen since are removed. */
  async markMissingMessagesRemoved(accountId: number, box: MessageBox, sweepStartedAt: Date, at: Date = new Date()): Promise<number> {
    const result = await this.db.query(MARK_MISSING, [accountId, box, sweepStartedAt, at]);
    return result.rowCount ?? 0;
  }
}

/** The kind of thing a message is about: the first of its subject's parts, else of its top-level parts. */
export function messageSubjectKind(m: MessageInput): MessageSubjectKind | null {
  const order: MessageSubjectKind[] = ["deviation", "status", "comment", "profile", "collection", "gallery"];
  const subject = m.subject as Partial<Record<MessageSubjectKind, unknown>> | null | undefined;
  const top = m as Partial<Record<MessageSubjectKind, unknown>>;
  return order.find((k) => subject?.[k] != null) ?? order.find((k) => top[k] != null) ?? null;
}

function messageRow(m: MessageInput) {
  const s = m.subject;
  return {
    messageid: m.messageid,
    type: m.type ?? null,
    ts: isoTime(m.ts),
    stackid: m.stackid ?? null,
    stack_count: m.stack_count ?? null,
    is_new: m.is_new ?? null,
    orphaned: m.orphaned ?? null,
    originator_userid: m.originator?.userid ?? null,
    subject_kind: messageSubjectKind(m),
    subject_deviationid: s?.deviation?.deviationid ?? m.deviation?.deviationid ?? null,
    subject_userid: s?.profile?.userid ?? m.profile?.userid ?? null,
    subject_statusid: s?.status?.statusid ?? m.status?.statusid ?? null,
    subject_commentid: s?.comment?.commentid ?? m.comment?.commentid ?? null,
    subject_folderid: s?.collection?.folderid ?? s?.gallery?.folderid ?? m.collection?.folderid ?? null,
    html: m.html ?? null,
    raw: m,
  };
}

const MARK_MISSING = `
UPDATE messages SET removed_at = $4, removed_reason = 'gone_from_listing'
WHERE account_id = $1 AND box = $2::message_box AND last_seen_at < $3 AND removed_at IS NULL`;
