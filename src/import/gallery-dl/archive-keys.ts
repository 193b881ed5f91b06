// The keys of gallery-dl's download archive for DeviantArt: "deviantart" + g_{user}_{index}.{ext} and
// its siblings (docs/service-behaviour.md#gallery-dl-archive). Users can change the format, so a key
// that does not parse is simply no hint.

/** Which listing a key came from: g gallery, f favourites, C collection, F gallery folder, j journal, S status, s scraps, "" Sta.sh. */
export type ArchiveSection = "g" | "f" | "C" | "F" | "j" | "S" | "s" | "";

export type ArchiveKey = {
  section: ArchiveSection;
  /** The lowercase username (g, f, j, S, s) or the folder's UUID (C, F); null for Sta.sh. */
  owner: string | null;
  index: number;
  /** The file id of a further image of a multi-image post (newer gallery-dl). */
  indexFile: number | null;
  extension: string;
};

const USER_KEY = /^deviantart([gfjSs])_(.+?)_(\d{1,15})(?:_(\d{1,15}))?\.([A-Za-z0-9]{1,10})$/;
const FOLDER_KEY = /^deviantart([CF])_([0-9A-Fa-f-]{36})_(\d{1,15})\.([A-Za-z0-9]{1,10})$/;
const STASH_KEY = /^deviantart(\d{1,15})\.([A-Za-z0-9]{1,10})$/;

export function parseArchiveKey(entry: string): ArchiveKey | undefined {
  const user = USER_KEY.exec(entry);
  if (user) {
    return {
      section: user[1] as ArchiveSection,
      owner: (user[2] as string).toLowerCase(),
      index: Number(user[3]),
      indexFile: user[4] === undefined ? null : Number(user[4]),
      extension: (user[5] as string).toLowerCase(),
    };
  }
  const folder = FOLDER_KEY.exec(entry);
  if (folder) {
    return {
      section: folder[1] as ArchiveSection,
      owner: (folder[2] as string).toLowerCase(),
      index: Number(folder[3]),
      indexFile: null,
      extension: (folder[4] as string).toLowerCase(),
    };
  }
  const stash = STASH_KEY.exec(entry);
  if (stash) return { section: "", owner: null, index: Number(stash[1]), indexFile: null, extension: (stash[2] as string).toLowerCase() };
  return undefined;
}
