// The page shapes of listings, shared by the catalogue's entries: one page of an offset, cursor or comment
// thread listing, with the item schema inside.
import { z } from "zod";
import { CommentContextSchema, CommentSchema, DeviationSchema } from "../types.ts";

const bool = () => z.boolean().nullish();
const num = () => z.number().nullish();
const str = () => z.string().nullish();

export const offsetPage = <T extends z.ZodType>(item: T) =>
  z.looseObject({ has_more: bool(), next_offset: num(), estimated_total: num(), name: str(), results: z.array(item) });
export const threadPage = z.looseObject({
  has_more: bool(),
  next_offset: num(),
  has_less: bool(),
  prev_offset: num(),
  total: num(),
  thread: z.array(CommentSchema),
});
export const siblingsPage = threadPage.extend({ context: CommentContextSchema });
export const cursorResults = <T extends z.ZodType>(item: T) =>
  z.looseObject({ has_more: bool(), cursor: str(), next_cursor: str(), prev_cursor: str(), results: z.array(item) });
export const cursorItems = <T extends z.ZodType>(item: T) => z.looseObject({ has_more: bool(), cursor: str(), items: z.array(item) });
export const offsetItems = <T extends z.ZodType>(item: T) => z.looseObject({ has_more: bool(), next_offset: num(), items: z.array(item) });

export const DeviationPage = offsetPage(DeviationSchema);
