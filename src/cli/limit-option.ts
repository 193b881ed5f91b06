// `--limit <n>` as commands take it: a whole number from 1 (and at most `max` where one is given), or one line that
// says so. Anything else (NaN, 0) listed nothing, as if nothing were there.
import { UserError } from "../errors.ts";

/** A commander option parser for `--limit` (or the option `flag` names), bounded above by `max` when given. */
export function limitOption(max?: number, flag = "--limit"): (value: string) => number {
  const range = max === undefined ? "from 1" : `from 1 to ${max}`;
  return (value) => {
    // Digits only: Number() also reads "1e3", "0x10" and " 5", which nobody types as a count.
    const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isInteger(n) || n < 1 || (max !== undefined && n > max)) throw new UserError(`${flag} expects a whole number ${range}, not "${value}"`);
    return n;
  };
}
