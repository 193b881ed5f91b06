// Human units shared by `dvault status` and the dashboard: durations and relative times. Sizes are the
// foundation's one formatter (src/text/bytes.ts).
import { formatUtcMinute } from "../timestamps.ts";

/** 42 s, 5 min, 3 h 10 min, 2 d 4 h. */
export function formatDuration(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** "in 5 min", "3 h ago", "—" for none. */
export function formatRelative(iso: string | null | undefined, now: number): string {
  if (!iso) return "—";
  const diff = Date.parse(iso) - now;
  if (Number.isNaN(diff)) return "—";
  if (Math.abs(diff) < 1000) return "now";
  return diff > 0 ? `in ${formatDuration(diff)}` : `${formatDuration(diff)} ago`;
}

/** When something is scheduled: "in 5 min", or "due" once the time has passed (it runs at the next chance). */
export function formatNext(iso: string | null | undefined, now: number): string {
  if (!iso) return "—";
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return "—";
  return at <= now ? "due" : formatRelative(iso, now);
}

/** 2026-11-22 09:00 UTC */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? "—" : formatUtcMinute(d);
}

/** Requests per second: "2.4/s", "0.25/s", "—" for none. */
export function formatRate(rate: number | null): string {
  if (rate === null) return "—";
  return `${rate >= 10 ? rate.toFixed(0) : rate >= 1 ? rate.toFixed(1) : rate.toFixed(2)}/s`;
}
