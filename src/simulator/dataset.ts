// The simulator's world: a seeded, deterministic dataset (users, deviations, folders, comments, notes,
// messages, watch feed) and its types. Routes read and change it; tests read it as ground truth. Each entity
// lives in dataset/ (its type, how it is drawn, what is computed from it); this is the one import path.
export { makeDeviation, type NewDeviationInput } from "./dataset/deviations.ts";
export { downloadableOwnerDeviations, galleryAllIds } from "./dataset/folders.ts";
export { generateDataset } from "./dataset/generate.ts";
export {
  HOSTILE_NAMES,
  HOSTILE_SCRIPT_DESCRIPTION,
  HOSTILE_SCRIPT_TITLE,
  HOSTILE_TITLES,
  OVERSIZED_DESCRIPTION_BYTES,
  OVERSIZED_TAGS,
  OVERSIZED_TITLE_CHARS,
  oversizedDescription,
} from "./dataset/hostile.ts";
export { addGeneratedMessage, type NewMessageInput } from "./dataset/inbox.ts";
export {
  DEFAULT_DATASET_SIZE,
  type Dataset,
  type DatasetOptions,
  type DatasetSize,
  type GroundTruth,
  type SimStashItem,
  type DeletedLookup,
  type DeviationKind,
  type DeviationQuirks,
  type SimDeviation,
  type SimImage,
  type SimCollectionFolder,
  type SimGalleryFolder,
  type HostileDataTargets,
  type FeedbackType,
  type MessageBox,
  type SimFeedItem,
  type SimMessage,
  type SimNote,
  type SimNoteFolder,
  type CommentTarget,
  type SimComment,
  type SimStatus,
  type SimUser,
  type SimWatch,
  type WatchFlags,
  type BucketPageKey,
  type GalleryVariance,
  type VarianceTruth,
} from "./dataset/model.ts";
export { deviationSlug, escapeHtml, simIso } from "./dataset/text.ts";
export { findUser, isGone, owner, userState, type UserState } from "./dataset/users.ts";
