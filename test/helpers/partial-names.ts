// The names a partial folder sees while something writes through it (fs.watch), for the tests that check a partial
// file names its writer (src/storage/layout.ts's writtenPartialKey): the file is gone by the time the write returns.
import { watch } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";

/** Runs `run` while watching `partialDir` (made if missing); an "end" file it writes last marks the last event. */
export async function partialNamesDuring<T>(partialDir: string, run: () => Promise<T>): Promise<{ result: T; names: string[] }> {
  await fs.mkdir(partialDir, { recursive: true });
  const names: string[] = [];
  let ended = () => {};
  const end = new Promise<void>((resolve) => (ended = resolve));
  const watcher = watch(partialDir, (_event, name) => {
    if (name) names.push(name);
    if (name === "end") ended();
  });
  try {
    const result = await run();
    await fs.writeFile(path.join(partialDir, "end"), "");
    await end;
    return { result, names: [...new Set(names.filter((n) => n !== "end"))] };
  } finally {
    watcher.close();
    await fs.rm(path.join(partialDir, "end"), { force: true });
  }
}
