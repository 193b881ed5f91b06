// What `dvault db status` shows and what `dvault db stop` does: the embedded server's folder, major, port,
// whether it runs, and the processes holding a lease on it; read without taking a lease or starting anything.
import { UserError } from "../../errors.ts";
import { pgBinaries } from "./binaries.ts";
import { embeddedLayout, newFolder, readState } from "./layout.ts";
import { liveHolders, withLockSync } from "./lease.ts";
import { folderMajor, type Running, runningServer, stopServerSync } from "./server.ts";
import { serverUser } from "./server-user.ts";

export type EmbeddedStatus = Readonly<{
  /** The data folder: the state's, or where the first start would make it. */
  folder: string;
  /** Whether initdb has made it (its PG_VERSION). */
  made: boolean;
  folderMajor: number | undefined;
  /** The installed binaries' major, or the reason they cannot run. */
  binaries: { major: number } | { problem: string };
  /** The port the server runs on, else the one it starts on next (undefined before the first start). */
  port: number | undefined;
  running: Running | undefined;
  /** The pids of the live processes holding a lease. */
  holders: number[];
}>;

function binariesOf(): EmbeddedStatus["binaries"] {
  try {
    return { major: pgBinaries().major };
  } catch (err) {
    return { problem: (err as Error).message };
  }
}

export function embeddedStatus({ dataDir }: { dataDir: string }): EmbeddedStatus {
  const layout = embeddedLayout(dataDir);
  const state = readState(layout);
  const folder = state?.folder ?? newFolder(dataDir, serverUser());
  const major = folderMajor(folder);
  const running = runningServer(folder);
  return {
    folder,
    made: major !== undefined,
    folderMajor: major,
    binaries: binariesOf(),
    port: running?.port ?? state?.port,
    running,
    holders: liveHolders(layout),
  };
}

export type StopOutcome = Readonly<{ stopped: boolean; folder: string; holders: number[] }>;

/**
 * Stops the embedded server (`pg_ctl stop -m fast`). While a live process other than this one holds a lease it is
 * refused, unless `force`: those processes then lose their connections (and the next of them to need the server
 * fails, as with any stopped server; the next command started starts it again).
 */
export function stopEmbedded({ dataDir, force }: { dataDir: string; force: boolean }): StopOutcome {
  const layout = embeddedLayout(dataDir);
  // Never made (no state): nothing runs, and taking the lock would make the data folder of an install that has none.
  if (!readState(layout)) return { stopped: false, folder: newFolder(dataDir, serverUser()), holders: [] };
  return withLockSync(layout, () => {
    const folder = readState(layout)?.folder;
    const holders = liveHolders(layout).filter((pid) => pid !== process.pid);
    if (!folder || !runningServer(folder)) return { stopped: false, folder: folder ?? newFolder(dataDir, serverUser()), holders };
    if (holders.length > 0 && !force) {
      throw new UserError(
        `the embedded server is in use by process${holders.length > 1 ? "es" : ""} ${holders.join(", ")}: end ${holders.length > 1 ? "them" : "it"} (the last to end stops the server), or run dvault db stop --force to stop it under ${holders.length > 1 ? "them" : "it"}`,
      );
    }
    stopServerSync({ bin: pgBinaries(), folder, user: serverUser() });
    return { stopped: true, folder, holders };
  });
}
