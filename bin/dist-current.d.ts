// Types of bin/dist-current.js for the TypeScript that imports it (bench/startup.ts, test/unit/cli-startup.test.ts).
export function distIsCurrent(root: string | URL): boolean;
