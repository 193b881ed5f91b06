// The client's methods for users: who is signed in, profiles, watching, statuses, tiers; each goes through its catalogue entry.
import type { PageIterator } from "../transport.ts";
import {
  type FriendsSearchResponse,
  FriendsSearchResponseSchema,
  type Placebo,
  PlaceboSchema,
  type Profile,
  type ProfilePost,
  ProfilePostSchema,
  ProfileSchema,
  type StatusPostResult,
  StatusPostResultSchema,
  type Success,
  SuccessSchema,
  type TiersResponse,
  TiersResponseSchema,
  type User,
  UserSchema,
  type WatchEntry,
  WatchEntrySchema,
  type Watching,
  WatchingSchema,
  type WhoisResponse,
  WhoisResponseSchema,
} from "../types.ts";
import type { ClientBase } from "./core.ts";
import { bracketed, definedOnly, joinExpand } from "./forms.ts";
import type { CallOptions, CursorListOptions, Expand, Mature, OffsetListOptions, ProfileUpdate, WatchFlags, WithSession } from "./params.ts";

/** The user methods of the client, mixed into DaClient (src/api/client.ts). */
export function UserMethods<B extends ClientBase>(Base: B) {
  return class extends Base {
    // ---- util, user ---------------------------------------------------------------------------------
    placebo(options?: CallOptions): Promise<Placebo> {
      return this.get("placebo", {}, PlaceboSchema, options);
    }

    whoami(params: { expand?: readonly Expand[] } = {}): Promise<User> {
      return this.get("user.whoami", { expand: joinExpand(params.expand) }, UserSchema);
    }

    /** POST with `usernames[]`, but a read. */
    whois(usernames: readonly string[], params: { expand?: readonly Expand[] } = {}): Promise<WhoisResponse> {
      return this.get("user.whois", { usernames: [...usernames], expand: joinExpand(params.expand) }, WhoisResponseSchema);
    }

    profile(username: string, params: { ext_collections?: boolean; ext_galleries?: boolean; expand?: readonly Expand[] } & WithSession = {}): Promise<Profile> {
      return this.get("user.profile", { username, ...params, expand: joinExpand(params.expand) }, ProfileSchema);
    }

    /** Journals and status updates of a user (cursor paging; stops on an empty cursor). */
    profilePosts(params: { username: string } & Mature & CursorListOptions): PageIterator<ProfilePost> {
      const { username, mature_content, ...list } = params;
      return this.cursor("user.profile.posts", { username, mature_content }, ProfilePostSchema, list);
    }

    /** The users `username` watches (gallery-dl's "watching" list). */
    friends(username: string, params: { expand?: readonly Expand[] } & Mature & OffsetListOptions = {}): PageIterator<WatchEntry> {
      const { expand, mature_content, ...list } = params;
      return this.offset("user.friends", { username, expand: joinExpand(expand), mature_content }, WatchEntrySchema, list);
    }

    watchers(username: string, params: { expand?: readonly Expand[] } & Mature & OffsetListOptions = {}): PageIterator<WatchEntry> {
      const { expand, mature_content, ...list } = params;
      return this.offset("user.watchers", { username, expand: joinExpand(expand), mature_content }, WatchEntrySchema, list);
    }

    /** Whether the authenticated user watches `username`. */
    watching(username: string): Promise<Watching> {
      return this.get("user.friends.watching", { username }, WatchingSchema);
    }

    /** Friends of `username` (default: the authenticated user) whose name starts with `query` (go-deviantart's and DeviantArtFs 2020's names). */
    friendsSearch(params: { query: string; username?: string; search?: string }): Promise<FriendsSearchResponse> {
      return this.get("user.friends.search", params, FriendsSearchResponseSchema);
    }

    /** A user's subscription tiers (deviation-shaped). */
    tiers(username: string): Promise<TiersResponse> {
      return this.get("user.tiers", { username }, TiersResponseSchema);
    }

    // ---- writes: statuses ---------------------------------------------------------------------------
    /** Scopes: browse, user.manage. `id` embeds a deviation or status; `parentid` shares a status; `stashid` a stash item. */
    statusPost(params: { body?: string; id?: string; parentid?: string; stashid?: string }): Promise<StatusPostResult> {
      return this.get("user.statuses.post", params, StatusPostResultSchema);
    }

    // ---- writes: watching, profile ------------------------------------------------------------------
    /**
     * Scopes: browse, user.manage. Sends all eight `watch[...]` flags; unspecified ones default to true
     * except `friend`. Watching unlocks watchers-only folders. Throttled by the service when repeated quickly.
     */
    watch(username: string, flags: Partial<WatchFlags> = {}): Promise<Success> {
      const all: WatchFlags = {
        friend: false,
        deviations: true,
        journals: true,
        forum_threads: true,
        critiques: true,
        scraps: true,
        activity: true,
        collections: true,
        ...definedOnly(flags),
      };
      return this.get("user.friends.watch", { username, ...bracketed("watch", all) }, SuccessSchema);
    }

    /** Scopes: browse, user.manage. A GET, as listed. */
    unwatch(username: string): Promise<Success> {
      return this.get("user.friends.unwatch", { username }, SuccessSchema);
    }

    /** Scope: user.manage (UNCERTAIN). Sends only the fields given. */
    profileUpdate(fields: ProfileUpdate): Promise<Success> {
      const { interests, social_links, ...rest } = fields;
      return this.get(
        "user.profile.update",
        { ...rest, ...bracketed("interests", interests ?? {}), ...bracketed("social_links", social_links ?? {}) },
        SuccessSchema,
      );
    }
  };
}
