// Types of bin/compile-cache.js for the TypeScript that imports it (test/unit/cli-startup.test.ts).
export function enableCompileCache(): void;
export function compileCacheDir(args: { env: Record<string, string | undefined>; uid: number | undefined; homedir: () => string }): string | undefined;
