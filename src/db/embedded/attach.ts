// The embedded server as a process uses it: attaching takes this process's lease and makes sure the server
// runs (src/db/embedded/ensure.ts); releasing gives the lease up and, when no other live process holds one,
// stops the server. A process that exits still holding a lease releases it on its way out ("exit"); one killed
// outright leaves a lease that no longer counts, and the next holder to end stops the server.
import { existsSync } from "node:fs";
import type { EmbeddedLayout } from "./layout.ts";
import { embeddedLayout, newFolder, readState } from "./layout.ts";
import { liveHolders, removeLease, withLock, withLockSync, writeLease } from "./lease.ts";
import { type EmbeddedServer, ensureEmbedded, noServerHere } from "./ensure.ts";
import { pgBinaries } from "./binaries.ts";
import { runningServer, stopServerSync } from "./server.ts";
import { serverUser } from "./server-user.ts";

export type EmbeddedAttachment = EmbeddedServer & { release(): void };

/** This process's attachments per data folder: one lease, however many parts of the process attached. */
const held = new Map<string, { count: number; server: EmbeddedServer }>();

/** Gives up this process's lease; the last live holder stops the server. Synchronous: it runs on "exit" too. */
function giveUp(layout: EmbeddedLayout): void {
  withLockSync(layout, () => {
    removeLease(layout);
    if (liveHolders(layout).length > 0) return;
    const folder = readState(layout)?.folder;
    if (folder && runningServer(folder)) stopServerSync({ bin: pgBinaries(), folder, user: serverUser() });
  });
}

let exitHooked = false;

function giveUpAll(): void {
  for (const dataDir of held.keys()) {
    held.delete(dataDir);
    try {
      giveUp(embeddedLayout(dataDir));
    } catch {
      // Nothing is left to tell on the way out: the lease of an ended process no longer counts, and the next holder to end stops the server.
    }
  }
}

/**
 * A signal that ends the process by Node's default (Ctrl-C on a command with no handler of its own: `auth login`
 * waiting for its callback) skips "exit", and the server outlived its last holder. With no other listener the lease
 * is given up and the signal raised again, so the process still ends as the signal ends it; a command that handles
 * the signal itself (the worker, stop-signal.ts) ends its own way and "exit" gives the lease up.
 */
function onEndingSignal(signal: NodeJS.Signals): void {
  const listener = () => {
    if (process.listenerCount(signal) > 1) return;
    process.off(signal, listener);
    giveUpAll();
    process.kill(process.pid, signal);
  };
  process.on(signal, listener);
}

function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.on("exit", giveUpAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) onEndingSignal(signal);
}

function attachment(dataDir: string, server: EmbeddedServer): EmbeddedAttachment {
  let released = false;
  return {
    ...server,
    release() {
      const entry = held.get(dataDir);
      if (released || !entry) return;
      released = true;
      entry.count -= 1;
      if (entry.count > 0) return;
      held.delete(dataDir);
      giveUp(embeddedLayout(dataDir));
    },
  };
}

/** Takes this process's lease on the embedded server of `dataDir` and makes sure it runs (started if not). */
export async function attachEmbedded({ dataDir }: { dataDir: string }, { create = true }: { create?: boolean } = {}): Promise<EmbeddedAttachment> {
  const layout = embeddedLayout(dataDir);
  // Before the lock and the lease, which would make the folder: a data folder typed wrong is left as it was.
  if (!create && !held.has(dataDir) && !readState(layout) && !existsSync(newFolder(dataDir, serverUser()))) throw noServerHere(dataDir);
  const server = await withLock(layout, async () => {
    const already = held.get(dataDir);
    if (already && runningServer(already.server.folder)) {
      already.count += 1;
      return already.server;
    }
    writeLease(layout);
    try {
      const started = await ensureEmbedded({ dataDir }, { create });
      held.set(dataDir, { count: (already?.count ?? 0) + 1, server: started });
      return started;
    } catch (err) {
      if (!already) removeLease(layout);
      throw err;
    }
  });
  hookExit();
  return attachment(dataDir, server);
}
