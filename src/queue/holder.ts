// Which process holds work, and the proof that one is dead (docs/RELIABILITY.md#work-held-by-a-dead-process).
// Every process that takes downloads (the worker, `dvault download --once`) is a holder
// "<host>:<pid>:<nonce>" (the nonce tells a restarted process that got the same pid from its
// predecessor), registered in the coordination store (src/coord/coordinator.ts) with a lease it renews while it runs. A holder is dead when, on
// this host and in this pid namespace, its pid no longer runs (process.kill(pid, 0) → ESRCH) or is now
// this very process; elsewhere, when its lease has expired. Nothing else counts: a slow holder, or one
// whose locks lapsed while the store was away, keeps its work.
// `dvault engine migrate` holds a lease too, with the role ENGINE_MIGRATE_ROLE, on both engines while it moves the
// install (src/engine/move.ts): a process about to work takes its lease with holdWorkLease, which registers first and
// then looks for one, as the move does the other way round, so that of a move and a starter at least one sees the other.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync, readlinkSync } from "node:fs";
import os from "node:os";
import type { Coordinator } from "../coord/coordinator.ts";
import { dropLock, lockHolder } from "../coord/lock.ts";
import { UserError } from "../errors.ts";
import { formatUtcMinute } from "../timestamps.ts";

/** A holder on another host counts as dead this long after its last renewal (as long as BullMQ's own job lock). */
const LEASE_TTL_S = 30;
const LEASE_EVERY_MS = 5_000;

/** The role of `dvault engine migrate`'s lease: while one is live on an engine, no worker or `--once` run starts there. */
export const ENGINE_MIGRATE_ROLE = "engine-migrate";

const HOST = os.hostname();
const PID_NAMESPACE = pidNamespace();
const NONCE = randomBytes(4).toString("hex");
const THIS_HOLDER = `${HOST}:${process.pid}:${NONCE}`;
/**
 * Where this process's pids mean something, as a file name can carry it: the host name made filename-safe (no "-", the
 * tag's separator) and a hash of the host name, the pid namespace and the boot, so that a pid of another machine with
 * the same name, of another container, or from before a reboot is never probed here.
 */
const WRITER_PLACE = `${HOST.replace(/[^A-Za-z0-9.]/g, "_").slice(0, 40) || "host"}-${createHash("sha256").update(`${HOST}\0${PID_NAMESPACE}\0${bootId()}`).digest("hex").slice(0, 12)}`;
const THIS_WRITER = `${WRITER_PLACE}-${process.pid}-${NONCE}`;

/** This process as a holder of work: BullMQ's `processedBy` of its jobs, the owner named in its file locks. */
export function thisHolder(): string {
  return THIS_HOLDER;
}

/**
 * This process as the writer of a file, for a file name: "<host>-<place>-<pid>-<nonce>" ([A-Za-z0-9._-] only). A partial
 * file named with it can be removed once writerHere proves its writer dead (src/downloads/partial-sweep.ts).
 */
export function thisWriterTag(): string {
  return THIS_WRITER;
}

/**
 * What this host can say of a writer tag (thisWriterTag of some process): "dead" by isHolderDead's proof on this host
 * and in this pid namespace (its pid no longer runs, or is now this process under another nonce); "alive" when it is
 * this process, or its pid runs here (a pid reused by another program reads so too, which only keeps a file longer);
 * "elsewhere" for another place's tag, whose file name carries no lease, and for anything that is not such a tag.
 */
export function writerHere(tag: string): "dead" | "alive" | "elsewhere" {
  if (tag === THIS_WRITER) return "alive";
  const pid = pidOfWriterHere(tag);
  if (pid === undefined) return "elsewhere";
  return pidDeadHere(pid) ? "dead" : "alive";
}

/** The pid of a writer tag of this host and pid namespace; undefined for another place's, or for anything else. */
function pidOfWriterHere(tag: string): number | undefined {
  if (!tag.startsWith(`${WRITER_PLACE}-`)) return undefined;
  const m = /^(\d+)-[0-9a-f]+$/.exec(tag.slice(WRITER_PLACE.length + 1));
  return m ? Number(m[1]) : undefined;
}

/**
 * Users of this process's lease, per engine and prefix: a worker and a `--once` run in one process share it; the two
 * engines of a move (one prefix on both) are two leases.
 */
const users = new Map<string, number>();
const usersKey = (coord: Coordinator, prefix: string) => `${coord.engine} ${prefix}`;

/**
 * This process as a holder under `prefix` while it keeps a lease there, else undefined: only a holder with
 * a lease may be named on a lock, since a name without one would read as dead.
 */
export function leasedHolder(prefix: string): string | undefined {
  return [...users.keys()].some((k) => k.endsWith(` ${prefix}`)) ? THIS_HOLDER : undefined;
}

const registryKey = (prefix: string) => `${prefix}:holders`;
const leaseKey = (prefix: string, holder: string) => `${prefix}:holder:${holder}`;
/** Items (e.g. download rows) a holder took that no queue job stands for: `dvault download --once`'s claims. */
export const heldItemsKey = (prefix: string, holder: string) => `${prefix}:holder:${holder}:items`;

export type HolderLease = {
  /** Records items this process took, so that they come back if it dies. */
  hold(items: readonly string[]): Promise<void>;
  /** They are finished or handed back. */
  drop(items: readonly string[]): Promise<void>;
  /** The last user of the lease in this process removes it, with the registry entry. */
  stop(): Promise<void>;
};

export type LeaseOptions = {
  roles?: readonly string[];
  /** How long the lease outlives its last renewal (LEASE_TTL_S; a test gives a shorter one); renewed a third of it apart at most. */
  ttlMs?: number;
};

/**
 * Registers this process as a holder under `prefix` and renews its lease until stop(). A worker names its
 * roles (src/queue/worker-roles.ts), so that status can say which host runs what; a one-shot run names none.
 */
export async function holdLease(coord: Coordinator, prefix: string, { roles = [], ttlMs = LEASE_TTL_S * 1000 }: LeaseOptions = {}): Promise<HolderLease> {
  const entry = JSON.stringify({ pidns: PID_NAMESPACE, since: new Date().toISOString(), host: HOST, pid: process.pid, roles });
  // The registry entry is written again with each renewal: a store that came back empty learns it anew.
  const renew = () =>
    coord.writeTogether([
      { hashPut: registryKey(prefix), fields: { [THIS_HOLDER]: entry } },
      { put: leaseKey(prefix, THIS_HOLDER), value: "1", ttlMs },
    ]);
  await renew();
  const usage = usersKey(coord, prefix);
  users.set(usage, (users.get(usage) ?? 0) + 1);
  // A failed renewal (the store away) is retried by the next tick, and at once when the connection is back.
  const renewSoon = () => void renew().catch(() => undefined);
  const timer = setInterval(renewSoon, Math.min(LEASE_EVERY_MS, Math.ceil(ttlMs / 3)));
  timer.unref();
  const stopListening = coord.onReconnect(renewSoon);
  let stopped = false;
  const items = heldItemsKey(prefix, THIS_HOLDER);
  return {
    async hold(list) {
      await coord.setAdd(items, list);
    },
    async drop(list) {
      await coord.setRemove(items, list);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      stopListening();
      const left = (users.get(usage) ?? 1) - 1;
      if (left > 0) return void users.set(usage, left);
      users.delete(usage);
      await forgetHolder(coord, prefix, THIS_HOLDER);
    },
  };
}

/**
 * holdLease for a process about to work on the engine (the worker, `--once` runs): refused, its lease given back,
 * while `dvault engine migrate` holds one there, which expires like any lease when the move is killed.
 */
export async function holdWorkLease(coord: Coordinator, prefix: string, options: LeaseOptions = {}): Promise<HolderLease> {
  const lease = await holdLease(coord, prefix, options);
  let moving: LiveHolder[];
  try {
    moving = (await liveHolders(coord, prefix)).filter((h) => h.holder !== THIS_HOLDER && h.roles.includes(ENGINE_MIGRATE_ROLE));
  } catch (err) {
    await lease.stop().catch(() => undefined);
    throw err;
  }
  if (moving.length === 0) return refusedIfMovedAway(coord, prefix, lease);
  await lease.stop().catch(() => undefined);
  throw new UserError(
    `dvault engine migrate (${moving.map(holderName).join(", ")}) is moving the install between engines: nothing was started; run this again when it has finished`,
  );
}

/** Where `dvault engine migrate` notes, on the engine it moved an install away from, which engine it went to. */
const movedToKey = (prefix: string) => `${prefix}:engine:moved-to`;

/** What movedToKey holds: the engine the install went to, and when (an ISO time; null when the note has none readable). */
export type MovedTo = { to: string; at: string | null };

/** Notes on the engine an install leaves (`coord`, `prefix`) that it went to `to` at `at` (read by readMovedTo). */
export async function noteMovedTo(coord: Coordinator, prefix: string, to: string, at: Date): Promise<void> {
  await coord.put(movedToKey(prefix), JSON.stringify({ to, at: at.toISOString() } satisfies MovedTo));
}

/** Removes noteMovedTo's note: the install comes (back) to this engine. */
export async function clearMovedTo(coord: Coordinator, prefix: string): Promise<void> {
  await coord.remove(movedToKey(prefix));
}

/** The note noteMovedTo left on this engine, or undefined when there is none. */
export async function movedAway(coord: Coordinator, prefix: string): Promise<MovedTo | undefined> {
  return readMovedTo(await coord.get(movedToKey(prefix)), coord.engine);
}

/** An engine's name as DVAULT_ENGINE takes it: one word, nothing a shell or a terminal reads otherwise. */
const ENGINE_NAME = /^[a-z][a-z0-9-]{0,31}$/;

/**
 * The note in `text`, read on the engine `readOn`; undefined when there is none, or the value is not one a move
 * writes: its `to` must name another engine, since it is printed as the DVAULT_ENGINE to set and inside a command to
 * run (refusedIfMovedAway, `dvault status`, `dvault engine status`). A time that does not parse is null.
 */
export function readMovedTo(text: string | undefined, readOn: string): MovedTo | undefined {
  if (!text) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!parsed || typeof parsed !== "object") return undefined;
  const { to, at } = parsed as Record<string, unknown>;
  if (typeof to !== "string" || !ENGINE_NAME.test(to) || to === readOn) return undefined;
  const time = typeof at === "string" ? Date.parse(at) : Number.NaN;
  return { to, at: Number.isFinite(time) ? new Date(time).toISOString() : null };
}

/** A note's time as the text forms print it. */
export const movedAtText = (moved: MovedTo): string => (moved.at ? formatUtcMinute(new Date(moved.at)) : "an unknown time");

/**
 * The lease, unless the install has moved away from this engine: a process that read DVAULT_ENGINE before a move
 * switched it (or whose environment still names the old engine) would otherwise run on an engine whose queues the
 * move emptied, beside the install's workers on the other. Registered first, then read, so that of a move and such a
 * starter at least one sees the other: the move notes the engine it went to before it gives its lease back.
 */
async function refusedIfMovedAway(coord: Coordinator, prefix: string, lease: HolderLease): Promise<HolderLease> {
  try {
    await refuseIfMovedAway(coord, prefix, "nothing was started");
  } catch (err) {
    await lease.stop().catch(() => undefined);
    throw err;
  }
  return lease;
}

/**
 * Throws the one line that says where the install went when `dvault engine migrate` moved it away from this engine
 * (`done`: what this command did not do, e.g. "nothing was queued"); nothing when it did not. For every command
 * that would act on the engine's queues: on the engine the install left, they are no one's.
 */
export async function refuseIfMovedAway(coord: Coordinator, prefix: string, done: string): Promise<void> {
  const moved = await movedAway(coord, prefix);
  if (!moved) return;
  // The move back names the engine it starts from: run in this process's settings (the old engine), a bare
  // `dvault engine migrate --to <old engine>` finds the install there already and moves nothing.
  throw new UserError(
    `this install was moved to ${moved.to} by dvault engine migrate (${movedAtText(moved)}), but this process was set to run on ${coord.engine}: ${done}; set DVAULT_ENGINE=${moved.to} where it is set (the settings file or the environment), or run DVAULT_ENGINE=${moved.to} dvault engine migrate --to ${coord.engine} to move it back`,
  );
}

/** "host:pid" as a person finds the process, or the holder's own name when its entry lacks them. */
export function holderName(h: LiveHolder): string {
  return h.host && h.pid !== null ? `${h.host}:${h.pid}` : h.holder;
}

/** Every registered holder (dead ones stay until reclaimed). */
export async function registeredHolders(coord: Coordinator, prefix: string): Promise<string[]> {
  return Object.keys(await coord.hashGetAll(registryKey(prefix)));
}

/** A registered holder whose lease is current, as its registry entry describes it (fields it lacks are null or empty). */
export type LiveHolder = { holder: string; host: string | null; pid: number | null; roles: string[]; since: string | null };

/** The holders whose lease has not expired, read tolerantly (entries of older versions carry no host, pid or roles). */
export async function liveHolders(coord: Coordinator, prefix: string): Promise<LiveHolder[]> {
  const registry = await coord.hashGetAll(registryKey(prefix));
  const holders = Object.keys(registry).sort();
  if (holders.length === 0) return [];
  const leased = await coord.getMany(holders.map((holder) => leaseKey(prefix, holder)));
  return holders.flatMap((holder, i) => (leased[i] !== undefined ? [describeHolder(holder, registry[holder] ?? "")] : []));
}

function describeHolder(holder: string, raw: string): LiveHolder {
  let entry: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed && typeof parsed === "object") entry = parsed as Record<string, unknown>;
  } catch {
    // A foreign value: the holder's name still tells its host and pid.
  }
  const named = parseHolder(holder);
  const roles = Array.isArray(entry.roles) ? entry.roles.filter((r): r is string => typeof r === "string") : [];
  return {
    holder,
    host: typeof entry.host === "string" ? entry.host : (named?.host ?? null),
    pid: Number.isInteger(entry.pid) ? (entry.pid as number) : (named?.pid ?? null),
    roles,
    since: typeof entry.since === "string" ? entry.since : null,
  };
}

/** Removes a holder's registry entry, lease and items: after a graceful stop, or once its work is reclaimed. */
export async function forgetHolder(coord: Coordinator, prefix: string, holder: string): Promise<void> {
  await coord.writeTogether([{ hashRemove: registryKey(prefix), fields: [holder] }, { remove: [leaseKey(prefix, holder), heldItemsKey(prefix, holder)] }]);
}

/** The proof (see the top of this file); false whenever it cannot be had. */
export async function isHolderDead(coord: Coordinator, prefix: string, holder: string): Promise<boolean> {
  if (holder === THIS_HOLDER) return false;
  const parsed = parseHolder(holder);
  if (!parsed) return false;
  if (parsed.host === HOST) {
    const pidns = registeredPidNamespace(await coord.hashGet(registryKey(prefix), holder));
    // Same host name but another pid namespace (two containers given one host name): its pids are not ours to probe.
    if (pidns === PID_NAMESPACE) return pidDeadHere(parsed.pid);
  }
  return !(await coord.exists(leaseKey(prefix, holder)));
}

/**
 * Deletes a lock (taken with acquireLock's `holder`) whose holder is dead, so the next taker need not
 * wait out its TTL. Returns whether it did; a lock of a live or unnamed holder is left alone.
 */
export async function breakLockOfDeadHolder(coord: Coordinator, prefix: string, key: string): Promise<boolean> {
  const held = await lockHolder(coord, key);
  if (!held || !(await isHolderDead(coord, prefix, held.holder))) return false;
  return dropLock(coord, key, held.token);
}

function registeredPidNamespace(entry: string | undefined): unknown {
  try {
    return entry === undefined ? undefined : (JSON.parse(entry) as { pidns?: unknown }).pidns;
  } catch {
    return undefined;
  }
}

function parseHolder(holder: string): { host: string; pid: number } | undefined {
  const m = /^(.+):(\d+):[0-9a-f]+$/.exec(holder);
  return m ? { host: m[1]!, pid: Number(m[2]) } : undefined;
}

/** Whether a process of this host and pid namespace, other than this one (its caller has told them apart), is gone. */
function pidDeadHere(pid: number): boolean {
  return pid === process.pid || !pidRuns(pid);
}

function pidRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** This boot of this machine on Linux (shared by its containers); elsewhere one value for every boot. */
function bootId(): string {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return "boot";
  }
}

/** "pid:[4026531836]" on Linux; elsewhere one value for the whole host. */
function pidNamespace(): string {
  try {
    return readlinkSync("/proc/self/ns/pid");
  } catch {
    return "host";
  }
}
