// The foundation's text helpers (src/text): one HTML escape, one HTML-to-text, one byte formatter, shared
// by the dashboard, the digest, the CLI and error messages.
import { describe, expect, it } from "vitest";
import { formatBytes } from "../../src/text/bytes.ts";
import { neutralizeControls } from "../../src/text/controls.ts";
import { htmlToText } from "../../src/text/html-to-text.ts";
import { escapeHtml, html, raw } from "../../src/text/html.ts";

describe(htmlToText.name, () => {
  it("keeps a line per block, trims each line and keeps at most one blank line in a row", () => {
    // The dashboard's former copy kept the spaces around each line, three blank lines as two, a no-break
    // space as such, and ran a blockquote into the next line; the digest's behaviour is the one kept.
    expect(htmlToText("<p>  one&nbsp;&nbsp;two </p>\n\n\n\n<blockquote> quoted </blockquote>after")).toBe("one two\n\nquoted\nafter");
    expect(htmlToText("a<br>&nbsp;<br>&nbsp;<br>b")).toBe("a\n\nb");
  });

  it("drops scripts and tags, decodes entities, and leaves unknown ones", () => {
    const html = "Love the <b>colours</b> &amp; light!<br>Really&#33;<script>x()</script> &#x263A; &bogus;";
    expect(htmlToText(html)).toBe("Love the colours & light!\nReally! ☺ &bogus;");
    expect(htmlToText("a < b and <script unclosed")).toBe("a < b and <script unclosed");
    expect(htmlToText(null)).toBe("");
  });
});

describe(escapeHtml.name, () => {
  it("escapes every character that can end text or an attribute", () => {
    expect(escapeHtml(`<a href="x" title='y'>\`&`)).toBe("&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&#96;&amp;");
    expect(escapeHtml(undefined)).toBe("");
    expect(escapeHtml(42)).toBe("42");
  });

  it("is what html`` applies to every value that is not itself html`` or raw()", () => {
    const evil = "<img onerror=x>";
    expect(html`<p>${evil}</p>${html`<b>${evil}</b>`}${raw("<hr>")}${[evil, null, false, 0]}`.text).toBe(
      "<p>&lt;img onerror=x&gt;</p><b>&lt;img onerror=x&gt;</b><hr>&lt;img onerror=x&gt;0",
    );
  });
});

describe(formatBytes.name, () => {
  it("uses binary units with one decimal from KiB up, and ? for an unknown size", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(1023)).toBe("1023 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(5 * 1024 ** 3 + 1024 ** 3 / 4)).toBe("5.3 GiB");
    expect(formatBytes(3 * 1024 ** 6)).toBe("3072 PiB");
    expect(formatBytes(32 * 1024 ** 2)).toBe("32 MiB");
    expect(formatBytes(1024 ** 3 + 1)).toBe("1 GiB");
    expect(formatBytes(-2048)).toBe("-2 KiB");
    expect(formatBytes(null)).toBe("?");
    expect(formatBytes(Number.NaN)).toBe("?");
  });
});

describe(neutralizeControls.name, () => {
  it("shows direction overrides, embeddings and isolates instead of applying them", () => {
    expect(neutralizeControls("Evil \u202Egnp.exe \u2066x\u2069 \u202Ay\u202C")).toBe("Evil [U+202E]gnp.exe [U+2066]x[U+2069] [U+202A]y[U+202C]");
    expect(neutralizeControls("plain – text ✓")).toBe("plain – text ✓");
  });

  it("leaves right-to-left writing as it is: Hebrew and Arabic letters, and the marks that place punctuation beside them", () => {
    const hebrew = "שלום עולם (גרסה 2)\u200F";
    const arabic = "مرحبا بالعالم\u200E!";
    expect(neutralizeControls(hebrew)).toBe(hebrew);
    expect(neutralizeControls(arabic)).toBe(arabic);
  });
});
