// Issue 27, rows 5 and 13, in the pure parts: the CLI's printer (src/cli/output/terminal.ts) escapes every control
// whoever wrote it and paints only dvault's own colours; JSON for scripts stays the same value; the pages dvault
// stores for people (src/text/inert-html.ts) keep the text and drop whatever runs, and an old page is taken apart
// and rebuilt once; the service's HTML on the dashboard's reading pages shows its direction overrides.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { jsonText } from "../../src/cli/output/print.ts";
import { forTerminal, markerColors } from "../../src/cli/output/terminal.ts";
import { storedHtml } from "../../src/http/pages/reading.ts";
import { terminalLogText } from "../../src/text/controls.ts";
import { ARCHIVE_PAGE_HEAD, inertHtml, inertStoredPage, isInertPage, readStoredTextPage, textPage } from "../../src/text/inert-html.ts";

const ESCAPES = "\u001b]0;pwned\u0007\u001b[2J\u001b]52;c;ZXZpbA==\u0007\u009b2J\u007f\r\u202E";

describe(forTerminal.name, () => {
  it("escapes every control and override, keeping newlines and tabs", () => {
    expect(forTerminal(`a${ESCAPES}b\n\tc`)).toBe("a\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\\x9b2J\\x7f\\x0d[U+202E]b\n\tc");
  });

  it("paints dvault's colours, and nothing that only looks like them", () => {
    const colors = markerColors(true);
    expect(forTerminal(`${colors.green("ok")} ${colors.bold(`x ${colors.dim("y")}`)}`)).toBe(
      "\u001b[32mok\u001b[39m \u001b[1mx \u001b[2my\u001b[22m\u001b[1m\u001b[22m",
    );
    // A title carrying a marker of its own (without this process's key) and a raw SGR: both printed as text.
    const forged = "\u{E000}00000000000000001\u{E000}red\u001b[31m";
    expect(forTerminal(forged)).toBe("\u{E000}00000000000000001\u{E000}red\\x1b[31m");
    expect(forTerminal(markerColors(false).red("plain"))).toBe("plain");
  });
});

describe("the pretty log in a terminal", () => {
  it("keeps pino-pretty's colours and escapes the rest: C1 controls and overrides in a message or an error's stack", () => {
    expect(terminalLogText(`\u001b[33mWARN\u001b[39m: a${ESCAPES}`)).toBe(`\u001b[33mWARN\u001b[39m: ${forTerminal(`a${ESCAPES}`)}`);
    // src/log.ts's pretty stream, in a process of its own (it writes to file descriptor 2).
    const script = `import { createLogger } from "./src/log.ts"; createLogger({ pretty: true }).warn({ err: new Error("e \\u009b2J \\u202Egnp") }, "m \\u009b2J \\u202Ey");`;
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8" });
    expect(run.stderr).toContain("WARN");
    expect(run.stderr).toContain("[U+202E]gnp");
    expect(run.stderr).not.toMatch(/[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/u);
  });
});

describe(jsonText.name, () => {
  it("is JSON of the same value with no character a terminal obeys", () => {
    const value = { title: `t${ESCAPES}`, n: 1 };
    const text = jsonText(value);
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u);
    expect(JSON.parse(text)).toEqual(value);
  });
});

const PAYLOAD = [
  `<p onclick="steal()">Chapter <b>one</b> &amp; <a href="javascript:steal()">two</a> <a href="https://example.org/x" target="_blank">three</a></p>`,
  `<script>steal()</script><img src="x.png" onerror="steal()"><iframe srcdoc="<script>steal()</script>">fallback</iframe>`,
  `<svg><script>steal()</script></svg><form action="https://evil.example"><input name="pw"></form><object data="x.swf"></object>`,
  `<table><tr><td colspan="2" style="color:red">cell</td></tr></table><p dir="rtl">שלום עולם</p><bdo dir="rtl">abc</bdo>`,
].join("\n");

describe(inertHtml.name, () => {
  it("keeps the text, its markup and safe links, and drops scripts, handlers, frames, forms and javascript: links", () => {
    const out = inertHtml(PAYLOAD);
    expect(out).not.toMatch(/script|onerror|onclick|iframe|srcdoc|javascript:|<form|<input|<object|<svg|steal|target=|<bdo/i);
    expect(out).toContain('<p>Chapter <b>one</b> &amp; <a>two</a> <a href="https://example.org/x">three</a></p>');
    expect(out).toContain('<td colspan="2" style="color:red">cell</td>');
    expect(out).toContain('<p dir="rtl">שלום עולם</p>abc');
    expect(out).toContain('<img src="x.png" />');
  });
});

describe(storedHtml.name, () => {
  it("shows the direction overrides of the service's HTML as html`` shows a title's, in its text and attributes", () => {
    const shown = storedHtml(
      '<p dir="rtl">Invoice \u202Efdp.exe, <a href="https://x.example/\u2067a" title="t\u202Dx">see</a> \u05E9\u05DC\u05D5\u05DD\u200F</p>',
    ).text;
    expect(shown).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/);
    expect(shown).toContain("Invoice [U+202E]fdp.exe");
    // Right-to-left writing, its marks and a paragraph's direction stay.
    expect(shown).toContain('dir="rtl"');
    expect(shown).toContain("\u05E9\u05DC\u05D5\u05DD\u200F");
  });
});

describe(textPage.name, () => {
  it("opens with its CSP before anything the service wrote, and closes the CSS in before it can close the <style>", () => {
    const page = textPage({ title: "T <i>", css: "p{color:red}</style><script>steal()</script>", body: PAYLOAD });
    expect(page.startsWith(ARCHIVE_PAGE_HEAD)).toBe(true);
    expect(ARCHIVE_PAGE_HEAD).toContain(`content="default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'`);
    expect(page).toContain("<style>p{color:red}<\\/style><script>steal()<\\/script></style>");
    expect(page).toContain("<title>T &lt;i&gt;</title>");
    expect(page.match(/<\/style>/g)).toHaveLength(1);
    expect(isInertPage(page)).toBe(true);
  });
});

describe(inertStoredPage.name, () => {
  const old = (css: string | null) =>
    `<!doctype html>\n<html><head><meta charset="utf-8"><title>A &amp; &lt;b&gt;</title>\n${css === null ? "" : `<style>${css}</style>\n`}</head>\n<body>\n<h1>A &amp; &lt;b&gt;</h1>\n${PAYLOAD}\n</body></html>\n`;

  it("takes a page stored before apart and rebuilds it inert, with its title and CSS; an inert page is left as it is", () => {
    expect(readStoredTextPage(old("p{}<\\/style>"))).toEqual({ title: "A & <b>", css: "p{}<\\/style>", body: PAYLOAD });
    expect(readStoredTextPage(old(null))).toEqual({ title: "A & <b>", css: null, body: PAYLOAD });
    const rebuilt = inertStoredPage(old("p{}"), "unused");
    expect(rebuilt).toBe(textPage({ title: "A & <b>", css: "p{}", body: PAYLOAD }));
    expect(inertStoredPage(rebuilt!, "unused")).toBeUndefined();
  });

  it("sanitizes a page that is none of dvault's whole, under the row's title", () => {
    const foreign = "<html><head><title>x</title><script>steal()</script></head><body><p>kept</p></body></html>";
    expect(readStoredTextPage(foreign)).toBeUndefined();
    const page = inertStoredPage(foreign, "Row title")!;
    expect(page).toContain("<h1>Row title</h1>\n<p>kept</p>");
    expect(page).not.toContain("steal");
  });
});
