// Types of scripts/build.js for the tests that import it.
export function copyAssets(from: string, to: string): string[];
