// Users and profiles: set-based upserts that keep profile edits in user_history, and the states of an
// artist the service answers as unavailable (docs/service-behaviour.md#user-error-codes).
import type { ProfileInput, UserInput } from "./mirror-input.ts";
import { intOrNull, isoTime, STATS_DUE, uniqueBy, type UpsertCounts } from "./mirror-rows.ts";
import { kysely, sql } from "./kysely.ts";
import { upsertPage } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

/** Why an artist's works are unavailable: the three states of docs/service-behaviour.md#user-error-codes. */
export type ArtistReason = "artist_suspended" | "artist_deactivated" | "artist_not_found";

export class UserRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Inserts or refreshes users from user objects (authors, watchers, senders...). Fields a minimal object
   * lacks keep their archived values; an edited profile field seen here is kept in user_history.
   */
  async upsertUsers(users: readonly UserInput[], seenAt: Date): Promise<UpsertCounts> {
    return this.upsert(
      uniqueBy(users, (u) => u.userid).map((u) => userRow(u)),
      seenAt,
    );
  }

  /**
   * Records /user/profile answers: authoritative for the profile fields (an emptied tagline is an edit),
   * sets profile_fetched_at and clears an unavailable state (the profile answered, so the account is
   * back); their works that were marked with it come back to life too (`revived` counts them).
   */
  async upsertProfiles(profiles: readonly ProfileInput[], fetchedAt: Date): Promise<UpsertCounts & { revived: number }> {
    const rows = uniqueBy(profiles, (p) => p.user.userid).map(profileRow);
    // Before the upsert clears the user's own state: works marked for an unavailable author are revived.
    const { rows: revived } = await REVIVE_WORKS(rows.map((r) => r.userid)).execute(kysely(this.db));
    const counts = await this.upsert(rows, fetchedAt);
    return { ...counts, revived: revived[0]?.n ?? 0 };
  }

  /**
   * Marks a user the service answers as suspended, deactivated or not found, and in the same statement
   * their deviations that are not removed for another reason (a deleted work stays deleted). Archived
   * values stay; a later profile answer revives both. Counts the rows newly marked or re-marked.
   */
  async markUserUnavailable(userid: string, reason: ArtistReason, at: Date): Promise<{ users: number; deviations: number }> {
    const { rows } = await MARK_UNAVAILABLE(userid, reason, at).execute(kysely(this.db));
    return rows[0] ?? { users: 0, deviations: 0 };
  }

  /**
   * An unavailable user asked about again, whose answer settled nothing: only when (the next check is a day on);
   * the user and their works stay as they are, a work seen live since included.
   */
  async noteUnavailableChecked(userid: string, at: Date): Promise<void> {
    await kysely(this.db).updateTable("users").set({ unavailable_checked_at: at }).where("userid", "=", userid).execute();
  }

  /** The username the mirror last saw the user under, if it has the user. */
  async usernameOf(userid: string): Promise<string | undefined> {
    const row = await kysely(this.db).selectFrom("users").select("username").where("userid", "=", userid).executeTakeFirst();
    return row?.username ?? undefined;
  }

  /** Unavailable users (authors of archived works) whose state was last checked before `before`, oldest first. */
  async listUnavailableUsers(before: Date, limit: number): Promise<Array<{ userid: string; username: string; reason: ArtistReason }>> {
    return kysely(this.db)
      .selectFrom("users")
      .select((eb) => ["userid", "username", eb.cast<ArtistReason>("removed_reason", "text").as("reason")])
      .where("removed_reason", "in", ARTIST_REASON_LIST)
      .where(sql`COALESCE(unavailable_checked_at, removed_at)`, "<", before)
      .orderBy(sql`COALESCE(unavailable_checked_at, removed_at)`)
      .orderBy("userid")
      .limit(limit)
      .execute();
  }

  private async upsert(rows: UserRow[], at: Date): Promise<UpsertCounts> {
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`userid text, username text, usericon text, type text, authoritative boolean, real_name text, tagline text, website text, country text, countryid integer, bio text, is_artist boolean, artist_level text, artist_specialty text, cover_photo text, joined_at timestamptz, watchers integer, friends integer, deviations integer, favourites integer, comments integer, pageviews integer, profile_comments integer, raw jsonb, profile_raw jsonb`,
      before: sql`
        old AS (
          SELECT u.userid, u.username, u.real_name, u.tagline, u.website, u.country, u.bio, u.artist_level,
            u.artist_specialty, u.profile_fetched_at
          FROM users u JOIN input USING (userid)
        ), changes AS (
          SELECT i.userid, f.field, f.old_value, f.new_value
          FROM input i JOIN old o USING (userid)
          CROSS JOIN LATERAL (VALUES
            ('username'::profile_field, o.username, i.username),
            ('real_name', o.real_name, i.real_name),
            ('tagline', o.tagline, i.tagline),
            ('website', o.website, i.website),
            ('country', o.country, i.country),
            ('bio', o.bio, i.bio),
            ('artist_level', o.artist_level, i.artist_level),
            ('artist_specialty', o.artist_specialty, i.artist_specialty)
          ) AS f(field, old_value, new_value)
          WHERE f.new_value IS DISTINCT FROM f.old_value
            AND (f.new_value IS NOT NULL OR i.authoritative)
            AND (f.old_value IS NOT NULL OR o.profile_fetched_at IS NOT NULL)
        ), history AS (
          INSERT INTO user_history (userid, changed_at, field, old_value, new_value)
          SELECT userid, ${at}, field, to_jsonb(old_value), to_jsonb(new_value) FROM changes
        )`,
      upsert: sql`
        INSERT INTO users AS u (userid, username, usericon, type, real_name, tagline, website, country, countryid, bio,
          is_artist, artist_level, artist_specialty, cover_photo, joined_at, watchers, friends, deviations, favourites,
          comments, pageviews, profile_comments, stats_sampled_at, raw, profile_raw, profile_fetched_at,
          first_seen_at, last_seen_at)
        SELECT userid, username, usericon, type, real_name, tagline, website, country, countryid, bio,
          is_artist, artist_level, artist_specialty, cover_photo, joined_at, watchers, friends, deviations, favourites,
          comments, pageviews, profile_comments,
          CASE WHEN num_nonnulls(watchers, friends, deviations, favourites, comments, pageviews, profile_comments) > 0
            THEN ${at}::timestamptz END,
          raw, profile_raw, CASE WHEN authoritative THEN ${at}::timestamptz END, ${at}, ${at}
        FROM input ORDER BY userid
        ON CONFLICT (userid) DO UPDATE SET
          username = EXCLUDED.username,
          usericon = COALESCE(EXCLUDED.usericon, u.usericon),
          type = COALESCE(EXCLUDED.type, u.type),
          real_name = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN EXCLUDED.real_name ELSE COALESCE(EXCLUDED.real_name, u.real_name) END,
          tagline = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN EXCLUDED.tagline ELSE COALESCE(EXCLUDED.tagline, u.tagline) END,
          website = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN EXCLUDED.website ELSE COALESCE(EXCLUDED.website, u.website) END,
          country = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN EXCLUDED.country ELSE COALESCE(EXCLUDED.country, u.country) END,
          countryid = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN EXCLUDED.countryid ELSE COALESCE(EXCLUDED.countryid, u.countryid) END,
          bio = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN EXCLUDED.bio ELSE u.bio END,
          is_artist = COALESCE(EXCLUDED.is_artist, u.is_artist),
          artist_level = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN EXCLUDED.artist_level ELSE COALESCE(EXCLUDED.artist_level, u.artist_level) END,
          artist_specialty = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN EXCLUDED.artist_specialty ELSE COALESCE(EXCLUDED.artist_specialty, u.artist_specialty) END,
          cover_photo = COALESCE(EXCLUDED.cover_photo, u.cover_photo),
          joined_at = COALESCE(EXCLUDED.joined_at, u.joined_at),
          watchers = CASE WHEN ${STATS_DUE("u")} THEN COALESCE(EXCLUDED.watchers, u.watchers) ELSE COALESCE(u.watchers, EXCLUDED.watchers) END,
          friends = CASE WHEN ${STATS_DUE("u")} THEN COALESCE(EXCLUDED.friends, u.friends) ELSE COALESCE(u.friends, EXCLUDED.friends) END,
          deviations = CASE WHEN ${STATS_DUE("u")} THEN COALESCE(EXCLUDED.deviations, u.deviations) ELSE COALESCE(u.deviations, EXCLUDED.deviations) END,
          favourites = CASE WHEN ${STATS_DUE("u")} THEN COALESCE(EXCLUDED.favourites, u.favourites) ELSE COALESCE(u.favourites, EXCLUDED.favourites) END,
          comments = CASE WHEN ${STATS_DUE("u")} THEN COALESCE(EXCLUDED.comments, u.comments) ELSE COALESCE(u.comments, EXCLUDED.comments) END,
          pageviews = CASE WHEN ${STATS_DUE("u")} THEN COALESCE(EXCLUDED.pageviews, u.pageviews) ELSE COALESCE(u.pageviews, EXCLUDED.pageviews) END,
          profile_comments = CASE WHEN ${STATS_DUE("u")} THEN COALESCE(EXCLUDED.profile_comments, u.profile_comments) ELSE COALESCE(u.profile_comments, EXCLUDED.profile_comments) END,
          stats_sampled_at = CASE WHEN ${STATS_DUE("u")} THEN EXCLUDED.stats_sampled_at ELSE u.stats_sampled_at END,
          raw = COALESCE(u.raw, '{}'::jsonb) || COALESCE(EXCLUDED.raw, '{}'::jsonb),
          profile_raw = COALESCE(EXCLUDED.profile_raw, u.profile_raw),
          profile_fetched_at = COALESCE(EXCLUDED.profile_fetched_at, u.profile_fetched_at),
          is_deactivated = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN false ELSE u.is_deactivated END,
          removed_at = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN NULL ELSE u.removed_at END,
          removed_reason = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN NULL ELSE u.removed_reason END,
          unavailable_checked_at = CASE WHEN EXCLUDED.profile_fetched_at IS NOT NULL THEN NULL ELSE u.unavailable_checked_at END,
          last_seen_at = GREATEST(u.last_seen_at, EXCLUDED.last_seen_at)
        RETURNING u.userid, (u.xmax = 0) AS inserted`,
      using: [],
      changed: sql`EXISTS (SELECT 1 FROM changes c WHERE c.userid = u.userid)`,
    });
  }
}

type UserRow = ReturnType<typeof userRow>;

function userRow(u: UserInput, profile?: ProfileInput) {
  return {
    userid: u.userid,
    username: u.username,
    usericon: u.usericon ?? null,
    type: u.type ?? null,
    /** A /user/profile answer: its nulls mean "empty", not "not sent". */
    authoritative: profile !== undefined,
    real_name: profile ? (profile.real_name ?? null) : (u.profile?.real_name ?? null),
    tagline: profile ? (profile.tagline ?? null) : (u.profile?.tagline ?? null),
    website: profile ? (profile.website ?? null) : (u.profile?.website ?? null),
    country: profile ? (profile.country ?? null) : (u.geo?.country ?? null),
    countryid: profile ? (profile.countryid ?? null) : (u.geo?.countryid ?? null),
    bio: profile ? (profile.bio ?? null) : null,
    is_artist: profile ? (profile.user_is_artist ?? null) : (u.profile?.user_is_artist ?? null),
    artist_level: profile ? (profile.artist_level ?? null) : (u.profile?.artist_level ?? null),
    artist_specialty: profile ? (profile.artist_specialty ?? null) : (u.profile?.artist_specialty ?? null),
    cover_photo: profile ? (profile.cover_photo ?? null) : (u.profile?.cover_photo ?? null),
    joined_at: isoTime(u.details?.joindate),
    watchers: intOrNull(u.stats?.watchers),
    friends: intOrNull(u.stats?.friends),
    deviations: intOrNull(profile?.stats?.user_deviations),
    favourites: intOrNull(profile?.stats?.user_favourites),
    comments: intOrNull(profile?.stats?.user_comments),
    pageviews: intOrNull(profile?.stats?.profile_pageviews),
    profile_comments: intOrNull(profile?.stats?.profile_comments),
    raw: u,
    profile_raw: profile ?? null,
  };
}

function profileRow(p: ProfileInput): UserRow {
  return userRow(p.user, p);
}

// A change needs a known new value (non-null, or null from an authoritative profile) and a known old
// value (non-null, or null recorded by an earlier profile fetch): first sightings are not edits.

const ARTIST_REASON_LIST: readonly ArtistReason[] = ["artist_suspended", "artist_deactivated", "artist_not_found"];
const ARTIST_REASONS = sql`(${sql.join(ARTIST_REASON_LIST.map((r) => sql.lit(r)))})`;

/** A state that changes (suspended → deactivated) keeps its first removed_at. */
const MARK_UNAVAILABLE = (userid: string, reason: ArtistReason, at: Date) => sql<{ users: number; deviations: number }>`
WITH old AS (
  SELECT removed_reason FROM users WHERE userid = ${userid}
), marked AS (
  UPDATE users SET is_deactivated = true, removed_at = CASE WHEN removed_reason IN ${ARTIST_REASONS} THEN removed_at ELSE ${at}::timestamptz END,
    removed_reason = ${reason}::removed_reason, unavailable_checked_at = ${at}
  WHERE userid = ${userid}
  RETURNING userid
), hidden AS (
  UPDATE deviations SET removed_at = COALESCE(removed_at, ${at}), removed_reason = ${reason}::removed_reason
  WHERE author_userid = ${userid} AND (removed_at IS NULL OR removed_reason IN ${ARTIST_REASONS}) AND removed_reason IS DISTINCT FROM ${reason}::removed_reason
  RETURNING deviationid
)
SELECT (SELECT count(*) FROM old WHERE removed_reason IS DISTINCT FROM ${reason}::removed_reason)::int AS users,
  (SELECT count(*) FROM hidden)::int AS deviations`;

/** The userids whose profile answered: their works marked for an unavailable author are live again. */
const REVIVE_WORKS = (userids: string[]) => sql<{ n: number }>`
WITH revived AS (
  UPDATE deviations SET removed_at = NULL, removed_reason = NULL
  WHERE author_userid = ANY(${userids}::text[]) AND removed_reason IN ${ARTIST_REASONS}
  RETURNING deviationid
)
SELECT count(*)::int AS n FROM revived`;
