// SIGINT and SIGTERM for a command that works on files it does not own (import, track import, restore): the
// first aborts the run's signal, so it stops at its next step and leaves what it did resumable; if it has not
// ended GRACE_MS later (a call the system does not let go of: a stalled mount), the process exits 130 anyway, and
// a second signal exits at once. Without this a run stuck in such a call ignored both signals until SIGKILL.
import { EXIT_INTERRUPTED } from "../errors.ts";
import { printErr } from "./output/print.ts";

const GRACE_MS = 3000;

export type StopSignal = { signal: AbortSignal; dispose(): void };

export function stopOnSignal(what: string, graceMs = GRACE_MS): StopSignal {
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const exitNow = () => {
    printErr(`dvault: ${what} stopped: run it again to go on`);
    process.exit(EXIT_INTERRUPTED);
  };
  const onSignal = () => {
    if (abort.signal.aborted) return exitNow();
    abort.abort();
    timer = setTimeout(exitNow, graceMs);
    timer.unref();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    signal: abort.signal,
    dispose() {
      clearTimeout(timer);
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}

/**
 * SIGINT and SIGTERM for a command whose steps stop on their own at the next one (sync --once, download --once,
 * archive --once): the first of each aborts the run's signal; a second of the same kind finds no listener and ends
 * the process as Node does by default.
 */
export function abortOnSignal(): StopSignal {
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  return {
    signal: abort.signal,
    dispose() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}
