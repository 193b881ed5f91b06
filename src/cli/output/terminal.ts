// The one way text reaches the terminal: every control character and direction override in it escaped (src/text/
// controls.ts), whoever wrote it, so a title, a folder name or a source's last error can never set the window title,
// clear the screen or write the clipboard (OSC 52). dvault's own colours survive because they are not escape codes
// until here: a colour is a marker carrying this process's random key, which no text from outside can know, turned
// into its escape code after everything else was escaped. Where a stream takes no colour, colorsFor (mode.ts) hands
// out plain colours that leave no marker at all.
import { randomBytes } from "node:crypto";
import { terminalText } from "../../text/controls.ts";

/** The colours and weights dvault paints with (picocolors' names; its createColors(true) fits the type too). */
export type Colors = Record<"bold" | "dim" | "red" | "green" | "yellow" | "cyan", (text: string) => string>;

const KEY = randomBytes(8).toString("hex");
/** A private-use character, the key, the SGR parameter: never printed as such. */
const MARK = new RegExp(`\u{E000}${KEY}(\\d{1,2})\u{E000}`, "g");
const mark = (sgr: number) => `\u{E000}${KEY}${sgr}\u{E000}`;

function tone(open: number, close: number): (text: string) => string {
  return (text) => `${mark(open)}${text.replaceAll(mark(close), mark(close) + mark(open))}${mark(close)}`;
}

/** Marker colours, painted by forTerminal; plain when `enabled` is false (the stream takes no colour: mode.ts colorsFor). */
export function markerColors(enabled: boolean): Colors {
  if (!enabled) {
    const plain = (text: string) => text;
    return { bold: plain, dim: plain, red: plain, green: plain, yellow: plain, cyan: plain };
  }
  return { bold: tone(1, 22), dim: tone(2, 22), red: tone(31, 39), green: tone(32, 39), yellow: tone(33, 39), cyan: tone(36, 39) };
}

/** `text` as it may reach a terminal: escaped, its newlines and tabs kept, dvault's colours as their escape codes. */
export function forTerminal(text: string): string {
  let out = "";
  let at = 0;
  for (const m of text.matchAll(MARK)) {
    out += terminalText(text.slice(at, m.index));
    out += `\u001b[${m[1]}m`;
    at = m.index + m[0].length;
  }
  return out + terminalText(text.slice(at));
}
