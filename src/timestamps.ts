// The service's timestamps (docs/service-behaviour.md#timestamps): epoch seconds and ISO 8601 strings read
// into Dates, never throwing. In the foundation because the client reads them and the mirror stores them.

/** Epoch seconds (number or numeric string) → Date; undefined for anything else. Never throws. */
export function parseEpochSeconds(value: unknown): Date | undefined {
  let seconds: number;
  if (typeof value === "number") seconds = value;
  else if (typeof value === "string" && /^\s*-?\d+(\.\d+)?\s*$/.test(value)) seconds = Number(value);
  else return undefined;
  if (!Number.isFinite(seconds)) return undefined;
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/**
 * ISO 8601 string → Date; undefined for anything else. Never throws. Accepts the service's offsets
 * without a colon (`2020-09-14T10:21:28-0700`) and a date-only form (`2020-09-14`, read as UTC).
 */
export function parseIsoTime(value: unknown): Date | undefined {
  if (typeof value !== "string") return undefined;
  const trimmed = value.trim();
  const iso = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(trimmed);
  if (!iso) return undefined;
  const [, date, time, zone] = iso;
  if (!isCalendarDate(date as string)) return undefined;
  let normalised = time ? `${date}T${time}` : `${date}T00:00:00`;
  if (zone) normalised += zone.toUpperCase() === "Z" ? "Z" : `${zone.slice(0, 3)}:${zone.slice(-2)}`;
  else normalised += "Z";
  const ms = Date.parse(normalised);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

/** Date.parse rolls 2020-02-31 over to March; reject impossible days instead. */
function isCalendarDate(ymd: string): boolean {
  const [y, m, d] = ymd.split("-").map(Number) as [number, number, number];
  if (m < 1 || m > 12 || d < 1) return false;
  return d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
}

/** A time as dvault's text forms print it, to the minute: "2026-11-22 09:00 UTC". */
export function formatUtcMinute(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}
