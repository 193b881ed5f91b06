// Counts in words: "1 comment", "3 comments" — the CLI, the dashboard and the digest alike.

/** "1 comment", "3 comments"; `many` for the irregular ones ("1 match", "2 matches"). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
