// Matches request paths against route templates; literal segments win over placeholders
// (/gallery/all before /gallery/{folderid}, /deviation/content before /deviation/{deviationid}).

export type Compiled<R> = { route: R; segments: string[]; literals: number };

export type Match<R> = { route: R; params: Record<string, string> };

function split(path: string): string[] {
  return path.split("/").filter((s) => s.length > 0);
}

export class Router<R extends { template: string }> {
  private readonly byLength = new Map<number, Array<Compiled<R>>>();

  constructor(routes: readonly R[]) {
    for (const route of routes) {
      const segments = split(route.template);
      const compiled = { route, segments, literals: segments.filter((s) => !s.startsWith("{")).length };
      const list = this.byLength.get(segments.length) ?? [];
      list.push(compiled);
      this.byLength.set(segments.length, list);
    }
    for (const list of this.byLength.values()) {
      // Most literal segments first; among equals, the one whose first placeholder comes later.
      list.sort((a, b) => b.literals - a.literals || firstPlaceholder(b.segments) - firstPlaceholder(a.segments));
    }
  }

  match(path: string): Match<R> | undefined {
    const parts = split(path);
    for (const candidate of this.byLength.get(parts.length) ?? []) {
      const params: Record<string, string> = {};
      let ok = true;
      for (let i = 0; i < parts.length; i++) {
        const seg = candidate.segments[i] as string;
        const part = parts[i] as string;
        if (seg.startsWith("{")) {
          try {
            params[seg.slice(1, -1)] = decodeURIComponent(part);
          } catch {
            ok = false;
            break;
          }
        } else if (seg !== part) {
          ok = false;
          break;
        }
      }
      if (ok) return { route: candidate.route, params };
    }
    return undefined;
  }
}

function firstPlaceholder(segments: string[]): number {
  const i = segments.findIndex((s) => s.startsWith("{"));
  return i === -1 ? segments.length : i;
}
