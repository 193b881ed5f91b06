// Invisible controls in text dvault shows (the dashboard, a digest, the terminal), made visible instead of applied.

/**
 * The bidirectional controls that reorder the letters around them: embeddings and overrides (U+202A–U+202E) and
 * isolates (U+2066–U+2069). The marks U+200E and U+200F only place neutral characters (a full stop, a bracket)
 * beside right-to-left words and are part of well-written Hebrew or Arabic: they are kept, as are the letters.
 */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;

/** C0 controls, DEL and C1 controls: what a terminal may obey (ESC starts a sequence; U+009B is a one-character CSI). */
const TERMINAL_CONTROLS = /[\u0000-\u001F\u007F-\u009F]/g;

const visible = (c: string) => `[U+${c.codePointAt(0)?.toString(16).toUpperCase().padStart(4, "0")}]`;

/**
 * A direction override can disguise a title ("Invoice \u202Efdp.exe" shows as "Invoice exe.pdf"): each bidirectional
 * control that reorders letters is shown as a visible escape instead of being applied by the browser or mail client.
 */
export function neutralizeControls(text: string): string {
  return text.replace(BIDI_CONTROLS, visible);
}

function escapeTerminalControls(text: string, keep: string): string {
  return neutralizeControls(text.replace(TERMINAL_CONTROLS, (c) => (keep.includes(c) ? c : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)));
}

/** One value as the terminal shows it (a file name, a line of a list): every control character escaped (a newline too), direction overrides made visible. */
export function shownInTerminal(text: string): string {
  return escapeTerminalControls(text, "");
}

/** Text of many lines as the terminal shows it: as shownInTerminal, but its newlines and tabs kept. */
export function terminalText(text: string): string {
  return escapeTerminalControls(text, "\n\t");
}

/** A colour code (SGR): ESC [ parameters m. */
const SGR = /(\u001b\[[0-9;]*m)/;

/**
 * A pretty log line for a terminal (src/log.ts): as terminalText, but colour codes kept, since pino-pretty paints the
 * level and message with them. Text from outside can at most colour itself; it never moves the cursor, clears the
 * screen, sets the window title or writes the clipboard.
 */
export function terminalLogText(text: string): string {
  return text
    .split(SGR)
    .map((part, i) => (i % 2 === 1 ? part : terminalText(part)))
    .join("");
}
