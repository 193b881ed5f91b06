// Debian's chromium for the browser tests (playwright-core drives it; nothing is downloaded), started headless with
// the flags this machine's closed network needs: without the background-networking ones it keeps trying to reach
// the internet at every start.
import { existsSync } from "node:fs";

export const CHROMIUM = "/usr/bin/chromium";

export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Whether chromium is here; when not, says so once for `file`, whose tests then skip. */
export function chromiumFor(file: string): boolean {
  const here = existsSync(CHROMIUM);
  if (!here) console.warn(`${file} skipped: ${CHROMIUM} is absent (install it with: apt-get install -y chromium)`);
  return here;
}
