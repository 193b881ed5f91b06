// Catalogue entries of one area (the staging area (Sta.sh)); each carries its response schema, so the
// client validates an answer with the entry it sent the request for.
import { z } from "zod";
import {
  CategoryTreeSchema,
  StashDeltaSchema,
  StashMetadataSchema,
  StashPublishResultSchema,
  StashPublishUserdataSchema,
  StashSpaceSchema,
  StashSubmitResultSchema,
  SuccessSchema,
} from "../types.ts";
import { USER, WRITE, offset, cursor, STASH_GONE, type Entry } from "./operation.ts";
import { offsetPage } from "./pages.ts";

/** `/stash/move/{stackid}` → `{target, changes}` (removed endpoint; shape from DeviantArtFs 2020). */
const StashMoveResultSchema = z.looseObject({ target: StashMetadataSchema.nullish(), changes: z.array(StashMetadataSchema).nullish() });

// Stash (staging area): everything but submit and publish is gone
export const STASH_ENTRIES = [
  { id: "stash.stack", method: "GET", path: "/stash/{stackid}", ...USER(["stash"]), listing: "B", removed: STASH_GONE,
    purpose: "Metadata of a stack",
    response: StashMetadataSchema },
  { id: "stash.stack.contents", method: "GET", path: "/stash/{stackid}/contents", ...USER(["stash"]), ...offset(50), listing: "B",
    removed: STASH_GONE, purpose: "Contents of a stack",
    response: offsetPage(StashMetadataSchema) },
  { id: "stash.delete", method: "GET", path: "/stash/delete", ...WRITE(["stash"]), removed: STASH_GONE,
    purpose: "Delete a previously submitted file",
    response: SuccessSchema },
  { id: "stash.delta", method: "GET", path: "/stash/delta", ...USER(["stash"]), removed: STASH_GONE,
    purpose: "List all staging folders and submissions of a user",
    note: "paged by cursor + offset (limit ≤ 120) with an `entries` array; not modelled by the transport's iterators (docs/service-behaviour.md#stash-delta-shape)",
    response: StashDeltaSchema },
  { id: "stash.item", method: "GET", path: "/stash/item/{itemid}", ...USER(["stash"]), removed: STASH_GONE, purpose: "Metadata of an item",
    response: StashMetadataSchema },
  { id: "stash.move", method: "POST", path: "/stash/move/{stackid}", ...WRITE(["stash"]), listing: "B", removed: STASH_GONE,
    purpose: "Move the stack into a target stack",
    response: StashMoveResultSchema },
  { id: "stash.position", method: "POST", path: "/stash/position/{stackid}", ...WRITE(["stash"]), listing: "B", removed: STASH_GONE,
    purpose: "Change the position of a stack within its parent",
    response: SuccessSchema },
  { id: "stash.publish", method: "POST", path: "/stash/publish", ...WRITE(["stash", "publish"]),
    purpose: "Publish a staged item as a deviation",
    response: StashPublishResultSchema },
  { id: "stash.publish.categorytree", method: "GET", path: "/stash/publish/categorytree", ...USER(["stash", "publish"]), removed: STASH_GONE,
    purpose: "Category information for publishing",
    response: CategoryTreeSchema },
  { id: "stash.publish.userdata", method: "GET", path: "/stash/publish/userdata", ...USER(["stash", "publish"]), removed: STASH_GONE,
    purpose: "The user's data about features and agreements",
    response: StashPublishUserdataSchema },
  { id: "stash.space", method: "GET", path: "/stash/space", ...USER(["stash"]), removed: STASH_GONE,
    purpose: "Staging space the user has left for uploads",
    response: StashSpaceSchema },
  { id: "stash.submit", method: "POST", path: "/stash/submit", ...WRITE(["stash"]),
    purpose: "Submit files to the staging area or modify existing files", note: "multipart with files; call /placebo first on long uploads",
    response: StashSubmitResultSchema },
  { id: "stash.update", method: "POST", path: "/stash/update/{stackid}", ...WRITE(["stash"]), listing: "B", removed: STASH_GONE,
    purpose: "Update a stack's details",
    response: SuccessSchema },
] as const satisfies readonly Entry[];
