// Which deviation a URL or id given to `dvault add` names: its id (a UUID, as the API knows it), or its artist and
// the numeric id its page URL ends in (docs/service-behaviour.md#deviation-url). The artist is read by the same
// parser as the track lists' URLs (username.ts), so the old <artist>.deviantart.com form works too.
import { userFromText } from "./username.ts";

export type DeviationRef = { deviationid: string } | { artist: string; numericId: string } | { unresolved: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The page of a work: /art/<slug>-<number> (or just the number), journals under /journal/. */
const WORK_PATH = /\/(?:art|journal)\/(?:[^/]*-)?(\d+)\/?$/i;

export function deviationRefFromText(input: string): DeviationRef {
  const text = input.trim();
  if (UUID.test(text)) return { deviationid: text.toUpperCase() };
  const work = WORK_PATH.exec(pathOf(text) ?? "");
  if (!work?.[1]) return { unresolved: "not a deviation's URL (…/<artist>/art/<title>-<number>) nor its id" };
  const named = userFromText(text);
  if (!("username" in named)) return { unresolved: named.unresolved };
  return { artist: named.username, numericId: work[1] };
}

/** The number a deviation object's `url` ends in, the same as its page's (undefined for another shape). */
export function numericIdOfUrl(url: string | null | undefined): string | undefined {
  return url ? WORK_PATH.exec(pathOf(url) ?? "")?.[1] : undefined;
}

function pathOf(text: string): string | undefined {
  try {
    return new URL(/^[a-z][a-z0-9+.-]*:/i.test(text) ? text : `https://${text}`).pathname;
  } catch {
    return undefined;
  }
}
