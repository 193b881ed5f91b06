// The dashboard's colour theme: the system's (the default), light or dark, kept in a cookie that only says how
// pages look. The links of the frame's theme switch (src/http/pages/layout.ts) are plain GETs to /theme, so it
// works without JavaScript; sendPage (src/http/respond.ts) writes the choice into <html data-theme>, which
// base.css reads (src/http/assets/base.css).
import type express from "express";
import type { Request } from "express";
import { readCookie, setCookie } from "./cookies.ts";

export const THEME_COOKIE = "dvault_theme";
export const THEMES = ["system", "light", "dark"] as const;
export type Theme = (typeof THEMES)[number];

function isTheme(value: unknown): value is Theme {
  return typeof value === "string" && (THEMES as readonly string[]).includes(value);
}

/** The theme a request's cookie chose; "system" when it chose none or something else. */
export function themeOf(req: Request): Theme {
  const chosen = readCookie(req, THEME_COOKIE);
  return isTheme(chosen) ? chosen : "system";
}

/** The page with its theme on <html>: layout() renders `data-theme="system"`, the request's choice replaces it. */
export function withTheme(page: string, theme: Theme): string {
  return theme === "system" ? page : page.replace('<html lang="en" data-theme="system">', `<html lang="en" data-theme="${theme}">`);
}

/**
 * Where /theme sends the browser back to: the page the switch was pressed on (the Referer, which the
 * dashboard's Referrer-Policy sends only to itself), when it is one of this dashboard's; the overview otherwise.
 */
function backTo(req: Request): string {
  const referer = req.get("referer");
  if (!referer) return "/";
  try {
    const from = new URL(referer);
    if (from.host !== req.get("host")) return "/";
    return from.pathname.startsWith("/") && !from.pathname.startsWith("//") ? `${from.pathname}${from.search}` : "/";
  } catch {
    return "/";
  }
}

export function themeRoutes(app: express.Express): void {
  // A GET, as it changes nothing but how this browser's pages look (no CSRF token to carry in a plain link).
  app.get("/theme", (req, res) => {
    const set = req.query.set;
    if (!isTheme(set)) return res.status(400).type("text").send("dvault: choose a theme: /theme?set=system, /theme?set=light or /theme?set=dark\n");
    if (set === "system") setCookie(res, THEME_COOKIE, "", { path: "/", sameSite: "lax", maxAge: 0 });
    else setCookie(res, THEME_COOKIE, set, { path: "/", sameSite: "lax", maxAge: 365 * 86400 });
    return res.redirect(303, backTo(req));
  });
}
