// The simulator's world: a seeded, deterministic dataset (users, deviations, folders, comments, notes,
// messages, watch feed) and its types. Routes read and change it; tests read it as ground truth. Each entity
// lives in dataset/ (its type, how it is drawn, what is computed from it); this is the one import path.
export {
  makeDeviation,
  type DeletedLookup,
  type DeviationKind,
  type DeviationQuirks,
  type NewDeviationInput,
  type SimDeviation,
  type SimImage,
} from "./dataset/deviations.ts";
export { downloadableOwnerDeviations, galleryAllIds, type SimCollectionFolder, type SimGalleryFolder } from "./dataset/folders.ts";
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
  type HostileDataTargets,
} from "./dataset/hostile.ts";
export {
  addGeneratedMessage,
  type FeedbackType,
  type MessageBox,
  type NewMessageInput,
  type SimFeedItem,
  type SimMessage,
  type SimNote,
  type SimNoteFolder,
} from "./dataset/inbox.ts";
export { DEFAULT_DATASET_SIZE, type Dataset, type DatasetOptions, type DatasetSize, type GroundTruth, type SimStashItem } from "./dataset/model.ts";
export type { CommentTarget, SimComment, SimStatus } from "./dataset/posts.ts";
export { deviationSlug, escapeHtml, simIso } from "./dataset/text.ts";
export { findUser, isGone, owner, userState, type SimUser, type SimWatch, type UserState, type WatchFlags } from "./dataset/users.ts";
