// Invisible controls in text dvault shows (a digest, the import report), made visible instead of applied.

/**
 * Bidirectional overrides and other invisible controls can disguise a title ("Evil \u202Egnp.exe"): shown
 * as visible escapes instead of being applied by the mail client.
 */
export function neutralizeControls(text: string): string {
  return text.replace(/[\u202A-\u202E\u2066-\u2069\u200E\u200F]/g, (c) => `[U+${c.codePointAt(0)?.toString(16).toUpperCase().padStart(4, "0")}]`);
}

/** Text from a file as the terminal shows it (a file name, a line of a list): control characters and direction overrides escaped, never obeyed. */
export function shownInTerminal(text: string): string {
  const escaped = [...text].map((c) => {
    const code = c.charCodeAt(0);
    return code < 0x20 || (code >= 0x7f && code <= 0x9f) ? `\\x${code.toString(16).padStart(2, "0")}` : c;
  });
  return neutralizeControls(escaped.join(""));
}
