// The words, names and small text helpers the simulator's dataset is drawn from. Changing a list, or the
// order of a list, changes every seeded world.

export const ADJECTIVES = [
  "quiet",
  "amber",
  "neon",
  "hollow",
  "lunar",
  "velvet",
  "crimson",
  "paper",
  "glass",
  "feral",
  "silent",
  "golden",
  "frozen",
  "little",
  "wild",
  "last",
];
export const NOUNS = [
  "harbor",
  "fox",
  "garden",
  "signal",
  "tide",
  "lantern",
  "orchard",
  "moth",
  "citadel",
  "meadow",
  "comet",
  "library",
  "river",
  "crow",
  "atlas",
  "ember",
];
export const NAME_PARTS = [
  "ink",
  "pixel",
  "moon",
  "sketch",
  "brush",
  "noir",
  "fable",
  "rune",
  "aster",
  "kite",
  "drift",
  "mossy",
  "echo",
  "vellum",
  "quill",
  "saffron",
];
export const TAGS = [
  "digitalart",
  "fantasy",
  "landscape",
  "portrait",
  "sketch",
  "watercolor",
  "scifi",
  "character",
  "oc",
  "fanart",
  "photography",
  "nature",
  "abstract",
  "study",
  "concept",
  "traditional",
];
export const WORDS = [...NOUNS, ...ADJECTIVES];
export const LICENSES = [
  "No License",
  "Creative Commons Attribution-Noncommercial-No Derivative Works 3.0 License",
  "Creative Commons Attribution 3.0 License",
];
export const COUNTRIES: Array<[number, string]> = [
  [1, "United States"],
  [4, "Germany"],
  [12, "Japan"],
  [33, "France"],
  [44, "United Kingdom"],
  [55, "Brazil"],
  [61, "Australia"],
  [82, "South Korea"],
];

export function cap(word: string): string {
  return word.length > 0 ? word[0]!.toUpperCase() + word.slice(1) : word;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The service's timestamp format: ISO seconds with "+0000". */
export function isoAt(epochMs: number): string {
  return `${new Date(epochMs).toISOString().slice(0, 19)}+0000`;
}

function slugify(title: string): string {
  const s = title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return s.length > 0 ? s.slice(0, 60) : "untitled";
}

export function deviationSlug(title: string): string {
  return slugify(title)
    .split("-")
    .map((w) => (w ? w[0]!.toUpperCase() + w.slice(1) : w))
    .join("-");
}

export { isoAt as simIso };
