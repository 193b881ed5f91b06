// The embedded server's leases: every process using the server holds one, a file named after its pid under
// postgres-leases/ (holding the pid and the process's start time, so a pid the system reused later is not taken
// for the holder). A lease whose process is gone does not count. The process that ends holding the last live
// lease stops the server. Taking and giving up a lease, and starting or stopping the server, happen under
// postgres.lock (a file created exclusively, naming its holder; a dead holder's lock is taken over), so a
// process attaching while another stops never finds the server gone under it.
import { readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { UserError } from "../../errors.ts";
import { makeDirsSync } from "../../make-dirs.ts";
import { dataDirFault, type EmbeddedLayout } from "./layout.ts";
import { pidAlive } from "./server.ts";

/** The process's start time (clock ticks after boot, /proc/<pid>/stat's field 22), where /proc tells; else "". */
export function processStart(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
  } catch {
    return "";
  }
}

const identity = (pid: number) => `${pid} ${processStart(pid)}`;

/** Whether the process a lease or the lock names ("<pid> <start>") still runs. */
function holderAlive(text: string): boolean {
  const [pidText, start = ""] = text.trim().split(" ");
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return false;
  return start === "" || processStart(pid) === "" || processStart(pid) === start;
}

export function writeLease(layout: EmbeddedLayout, pid = process.pid): void {
  makeDirsSync(layout.leasesDir);
  writeFileSync(path.join(layout.leasesDir, String(pid)), identity(pid));
}

export function removeLease(layout: EmbeddedLayout, pid = process.pid): void {
  try {
    unlinkSync(path.join(layout.leasesDir, String(pid)));
  } catch {
    /* already gone */
  }
}

/** The pids holding a live lease, sorted; a dead process's lease file is removed on the way. */
export function liveHolders(layout: EmbeddedLayout): number[] {
  let names: string[];
  try {
    names = readdirSync(layout.leasesDir);
  } catch {
    return [];
  }
  const live: number[] = [];
  for (const name of names) {
    const file = path.join(layout.leasesDir, name);
    const text = (() => {
      try {
        return readFileSync(file, "utf8");
      } catch {
        return undefined;
      }
    })();
    if (text !== undefined && holderAlive(text)) live.push(Number(name));
    else removeLease(layout, Number(name));
  }
  return live.sort((a, b) => a - b);
}

let lockDepth = 0;

/** Takes postgres.lock if it is free or its holder is gone; false while a live process holds it. */
function tryLock(layout: EmbeddedLayout): boolean {
  try {
    makeDirsSync(layout.dataDir);
    writeFileSync(layout.lockFile, identity(process.pid), { flag: "wx" });
    return true;
  } catch (err) {
    // The first write into the data folder: one that refuses it (or a file in its place) is said in one line.
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw dataDirFault(err, layout) ?? err;
  }
  const text = (() => {
    try {
      return readFileSync(layout.lockFile, "utf8");
    } catch {
      return undefined;
    }
  })();
  // Empty: its holder is between creating and writing it, unless that was long ago (it died there).
  const young = text === "" && Date.now() - (statSync(layout.lockFile, { throwIfNoEntry: false })?.mtimeMs ?? 0) < 5000;
  if (text === undefined || young || holderAlive(text)) return false;
  unlinkSync(layout.lockFile);
  return tryLock(layout);
}

function unlock(layout: EmbeddedLayout): void {
  lockDepth -= 1;
  if (lockDepth === 0) unlinkSync(layout.lockFile);
}

const LOCK_WAIT_MS = 120_000;
const LOCK_POLL_MS = 20;

function lockTimeout(layout: EmbeddedLayout): UserError {
  const holder = (() => {
    try {
      return readFileSync(layout.lockFile, "utf8").split(" ")[0];
    } catch {
      return "?";
    }
  })();
  return new UserError(
    `${layout.lockFile} has been held by process ${holder} for over ${LOCK_WAIT_MS / 1000} s (starting or stopping the embedded server): end that process, or remove the file if it is gone`,
  );
}

/** This process's turns at the lock, one after another (the file lock alone would let a second turn of this process in). */
let turns: Promise<unknown> = Promise.resolve();

/** Runs `fn` holding postgres.lock, waiting while another live process holds it. */
export function withLock<T>(layout: EmbeddedLayout, fn: () => Promise<T>): Promise<T> {
  const turn = turns.then(async () => {
    const deadline = Date.now() + LOCK_WAIT_MS;
    while (!tryLock(layout)) {
      if (Date.now() > deadline) throw lockTimeout(layout);
      await delay(LOCK_POLL_MS);
    }
    lockDepth += 1;
    try {
      return await fn();
    } finally {
      unlock(layout);
    }
  });
  turns = turn.catch(() => undefined);
  return turn;
}

/** withLock for an exiting process, which can only wait synchronously. */
export function withLockSync<T>(layout: EmbeddedLayout, fn: () => T): T {
  if (lockDepth === 0) {
    const deadline = Date.now() + LOCK_WAIT_MS;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    while (!tryLock(layout)) {
      if (Date.now() > deadline) throw lockTimeout(layout);
      Atomics.wait(pause, 0, 0, LOCK_POLL_MS);
    }
  }
  lockDepth += 1;
  try {
    return fn();
  } finally {
    unlock(layout);
  }
}
