// One way to show a size to a person, in the CLI, the dashboard, the digest and error messages alike.

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** 512 → "512 B", 1536 → "1.5 KiB": binary units, one decimal from KiB up; "?" when the size is unknown. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return "?";
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${UNITS[unit]}`;
}
