// One way to show a size to a person, in the CLI, the dashboard, the digest and error messages alike.

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** 512 → "512 B", 1536 → "1.5 KiB", 32 MiB → "32 MiB": binary units, one decimal from KiB up unless the size is whole; "?" when unknown. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return "?";
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${value} B`;
  const shown = value.toFixed(1);
  return `${shown.endsWith(".0") ? shown.slice(0, -2) : shown} ${UNITS[unit]}`;
}
