// The registry of sync sources: every source kind dvault mirrors, by name.
import type { SourceDefinition } from "../source.ts";
import { collectionsSource } from "./collections.ts";
import { commentsSource } from "./comments.ts";
import { gallerySource } from "./gallery.ts";
import { messagesSource } from "./messages.ts";
import { notesSource } from "./notes.ts";
import { profilePostsSource } from "./profile-posts.ts";
import { profileSource } from "./profile.ts";
import { stashSource } from "./stash.ts";
import { staticSource } from "./static.ts";
import { trackedSource } from "./tracked.ts";
import { watchFeedSource } from "./watch-feed.ts";

/** In the order a first sync runs them: the profile (users, watch lists) first, static data last. */
export const SOURCES: readonly SourceDefinition[] = [
  profileSource,
  gallerySource,
  collectionsSource,
  commentsSource,
  profilePostsSource,
  messagesSource,
  notesSource,
  watchFeedSource,
  stashSource,
  staticSource,
  trackedSource,
];
