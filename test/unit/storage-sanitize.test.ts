// Path components from hostile names: nothing escapes, hides, reorders text or collides by accident.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { extensionFor } from "../../src/storage/extension.ts";
import { readableName, sanitizeComponent, truncateUtf8 } from "../../src/storage/sanitize.ts";

const LONG = "A very long title ".repeat(17).slice(0, 300);
const HOSTILE = [
  "../../etc/passwd",
  "..",
  ".",
  "...",
  "/etc/passwd",
  "C:\\Windows\\system32",
  "a/b\\c",
  LONG,
  "é".repeat(200),
  "🦊".repeat(60),
  "nul\u0000byte",
  "tab\tand\nnewline\r",
  "Evil \u202Egnp.exe Title",
  "\u2066isolate\u2069 \u200Fmark\u200E \u061Carabic",
  "CON",
  "con",
  "nul.txt",
  "COM1.jpg",
  "LPT9",
  "AUX . ",
  "trailing dots...",
  "trailing spaces   ",
  ".hidden",
  "   ",
  "",
  "\u202E",
  'quote"s <and> pipes|?*:',
  "Café",
  "Cafe\u0301",
];

const BIDI = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/u;
const CONTROLS = /[\u0000-\u001F\u007F-\u009F]/u;

describe(sanitizeComponent.name, () => {
  it.each(HOSTILE.map((h) => [JSON.stringify(h), h]))("makes %s one safe component", (_label, name) => {
    const out = sanitizeComponent(name);
    expect(out.length).toBeGreaterThan(0);
    expect(out).not.toMatch(/[/\\]/);
    expect(out).not.toMatch(CONTROLS);
    expect(out).not.toMatch(BIDI);
    expect(out).not.toBe(".");
    expect(out).not.toBe("..");
    expect(out.startsWith(".")).toBe(false);
    expect(out).not.toMatch(/[. ]$/);
    expect(out).toBe(out.normalize("NFC"));
    expect(Buffer.byteLength(out, "utf8")).toBeLessThanOrEqual(150);
    expect(out.split(".")[0]).not.toMatch(/^(con|prn|aux|nul|com[1-9]|lpt[1-9])$/i);
    // Joined to a root, it stays a direct child of that root.
    const root = "/archive/root";
    expect(path.dirname(path.join(root, out))).toBe(root);
    // Deterministic.
    expect(sanitizeComponent(name)).toBe(out);
  });

  it("keeps ordinary names as they are", () => {
    expect(sanitizeComponent("Quiet Harbor 12")).toBe("Quiet Harbor 12");
    expect(sanitizeComponent("Emoji 🦊 and ünïcödé — dash")).toBe("Emoji 🦊 and ünïcödé — dash");
  });

  it("prefixes Windows device names, with or without an extension", () => {
    expect(sanitizeComponent("CON")).toBe("_CON");
    expect(sanitizeComponent("nul.txt")).toBe("_nul.txt");
    expect(sanitizeComponent("com1.tar.gz")).toBe("_com1.tar.gz");
    expect(sanitizeComponent("CONsole")).toBe("CONsole");
  });

  it("removes bidi controls rather than replacing them, so the visible text is what is stored", () => {
    expect(sanitizeComponent("Evil \u202Egnp.exe Title")).toBe("Evil gnp.exe Title");
  });

  it("normalises NFD to NFC", () => {
    expect(sanitizeComponent("Cafe\u0301")).toBe(sanitizeComponent("Café"));
  });

  it("caps in UTF-8 bytes without splitting a code point", () => {
    const out = sanitizeComponent("🦊".repeat(60), { maxBytes: 10 });
    expect(out).toBe("🦊🦊");
    expect(Buffer.from(out, "utf8").toString("utf8")).toBe(out);
    expect(truncateUtf8("aé", 2)).toBe("a");
  });

  it("falls back when nothing is left", () => {
    expect(sanitizeComponent("..")).toBe("untitled");
    expect(sanitizeComponent("\u202E", { fallback: "folder" })).toBe("folder");
    expect(sanitizeComponent("", { fallback: "../x" })).toBe("_._x");
  });
});

describe(readableName.name, () => {
  const id = "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0";

  it("is '<title> [<id>].<ext>'", () => {
    expect(readableName({ title: "Quiet Harbor", deviationid: id, ext: "png" })).toBe(`Quiet Harbor [${id}].png`);
  });

  it("keeps the id and extension when the title is 300 characters long", () => {
    const name = readableName({ title: LONG, deviationid: id, ext: "jpg" });
    expect(Buffer.byteLength(name, "utf8")).toBeLessThanOrEqual(150);
    expect(name.endsWith(` [${id}].jpg`)).toBe(true);
  });

  it("gives distinct names to hostile titles of distinct deviations, and the same name again for the same input", () => {
    const names = HOSTILE.map((title, i) => readableName({ title, deviationid: `${id.slice(0, -2)}${String(i).padStart(2, "0")}`, ext: "jpg" }));
    expect(new Set(names).size).toBe(HOSTILE.length);
    // Titles differing only in case or normalisation stay apart through their ids.
    const a = readableName({ title: "Sunset", deviationid: "A-1", ext: "png" });
    const b = readableName({ title: "SUNSET", deviationid: "A-2", ext: "png" });
    const c = readableName({ title: "Café", deviationid: "A-3", ext: "png" });
    const d = readableName({ title: "Cafe\u0301", deviationid: "A-4", ext: "png" });
    expect(new Set([a, b, c, d].map((n) => n.toLowerCase())).size).toBe(4);
    expect(readableName({ title: "Cafe\u0301", deviationid: "A-4", ext: "png" })).toBe(d);
    for (const name of names) expect(path.dirname(path.join("/r", name))).toBe("/r");
  });

  it("replaces an unsafe extension", () => {
    expect(readableName({ title: "x", deviationid: "id", ext: "../sh" })).toBe("x [id].bin");
    expect(readableName({ title: "x", deviationid: "id", ext: ".PNG" })).toBe("x [id].png");
  });
});

describe(extensionFor.name, () => {
  it("prefers the filename, then the URL, then the MIME type, then the fallback", () => {
    expect(extensionFor({ filename: "quiet_harbor_by_x.JPEG", mime: "image/png" })).toBe("jpg");
    expect(extensionFor({ url: "https://cdn.example/f/abc/v1/fill/w_300,q_80/name-pre.png?token=eyJ" })).toBe("png");
    expect(extensionFor({ filename: "no-extension", mime: "image/gif; charset=binary" })).toBe("gif");
    expect(extensionFor({ filename: "../../etc/passwd" })).toBe("bin");
    expect(extensionFor({ filename: "evil.ex\u202Ee", fallback: "mp4" })).toBe("mp4");
    // A name may not choose an executable extension, bidi trick or not: the MIME type decides.
    expect(extensionFor({ filename: "evil\u202Egnp.exe", mime: "image/png" })).toBe("png");
    expect(extensionFor({ filename: "run.BAT", url: "http://x/_cdn/original/id/run.bat", fallback: "jpg" })).toBe("jpg");
    expect(extensionFor({})).toBe("bin");
  });
});
