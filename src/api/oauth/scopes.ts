// Scopes: the defaults an archive asks for, reading a list as given, and what a grant left out.

/** Read scopes an archive needs (docs/service-behaviour.md#scopes): content (browse), whoami (user), messages, notes, the old feeds. */
export const DEFAULT_SCOPES = ["basic", "browse", "user", "message", "note", "feed"] as const;

/** Space- or comma-separated scopes, de-duplicated, with `basic` first. */
export function normaliseScopes(...lists: Array<string | readonly string[] | undefined>): string[] {
  const out = new Set<string>();
  for (const list of lists) {
    if (list === undefined) continue;
    const items = typeof list === "string" ? list.split(/[\s,+]+/) : list;
    for (const item of items) if (item.trim()) out.add(item.trim());
  }
  const sorted = [...out];
  return sorted.includes("basic") ? ["basic", ...sorted.filter((s) => s !== "basic")] : sorted;
}

/** Scopes asked for but not granted; `downgraded` when the service fell back to `basic` alone. */
export function compareScopes(requested: readonly string[], granted: readonly string[]): { missing: string[]; downgraded: boolean } {
  const missing = requested.filter((s) => !granted.includes(s));
  const downgraded = granted.length === 1 && granted[0] === "basic" && requested.some((s) => s !== "basic");
  return { missing, downgraded };
}
