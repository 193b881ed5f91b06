// Types of scripts/test-seed.js for the test that imports it.
export function seedOfCommit(commit: string): number;
