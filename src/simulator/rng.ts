// A small seeded PRNG (mulberry32) so the dataset and probability faults are reproducible from a seed.

export type Rng = {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max] (inclusive). */
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** Up to n distinct items, in a random order. */
  sample<T>(items: readonly T[], n: number): T[];
  /** An uppercase UUID-shaped id (the service's deviationid style). */
  uuid(): string;
  hex(length: number): string;
  /** A child generator whose sequence does not disturb this one's. */
  fork(label: string): Rng;
};

export function hashString(text: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export function createRng(seed: number): Rng {
  let state = seed >>> 0 || 0x9e3779b9;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const hex = (length: number) => {
    let out = "";
    while (out.length < length)
      out += Math.floor(next() * 0x100000000)
        .toString(16)
        .padStart(8, "0");
    return out.slice(0, length);
  };
  const rng: Rng = {
    next,
    int,
    chance: (p) => next() < p,
    pick<T>(items: readonly T[]): T {
      if (items.length === 0) throw new RangeError("pick from an empty list");
      return items[Math.floor(next() * items.length)] as T;
    },
    sample<T>(items: readonly T[], n: number): T[] {
      const copy = items.slice();
      const count = Math.min(n, copy.length);
      for (let i = 0; i < count; i++) {
        const j = i + Math.floor(next() * (copy.length - i));
        [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
      }
      return copy.slice(0, count);
    },
    uuid() {
      const h = hex(32).toUpperCase();
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
    },
    hex,
    fork: (label) => createRng(hashString(label, Math.floor(next() * 0xffffffff))),
  };
  return rng;
}
