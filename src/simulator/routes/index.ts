// Every API route of the simulator (docs/service-behaviour.md#catalogue-listings, both listings, plus the paths public clients use:
// docs/service-behaviour.md#literature-update-path).
import type { ApiRoute } from "../world.ts";
import { browseRoutes } from "./browse.ts";
import { collectionRoutes } from "./collections.ts";
import { commentRoutes } from "./comments.ts";
import { dataRoutes } from "./data.ts";
import { deviationRoutes } from "./deviation.ts";
import { feedRoutes } from "./feed.ts";
import { galleryRoutes } from "./gallery.ts";
import { messageRoutes } from "./messages.ts";
import { noteRoutes } from "./notes.ts";
import { stashRoutes } from "./stash.ts";
import { userRoutes } from "./user.ts";

export const allRoutes: ApiRoute[] = [
  ...dataRoutes,
  ...browseRoutes,
  ...collectionRoutes,
  ...commentRoutes,
  ...deviationRoutes,
  ...feedRoutes,
  ...galleryRoutes,
  ...messageRoutes,
  ...noteRoutes,
  ...stashRoutes,
  ...userRoutes,
];
