// The dashboard's two cookies (the token /login sets, the CSRF double-submit token), read and written with
// the `cookie` package: a value that is not valid percent-encoding stays as sent and so never matches.
import type { Request, Response } from "express";
import { parseCookie, type SerializeOptions, stringifySetCookie } from "cookie";

export const TOKEN_COOKIE = "dvault_token";
export const CSRF_COOKIE = "dvault_csrf";

/** The value of a request's cookie, undefined when it sent none by that name (the first one wins). */
export function readCookie(req: Request, name: string): string | undefined {
  return parseCookie(req.headers.cookie ?? "")[name];
}

/** Adds a Set-Cookie header (several may be set on one response). */
export function setCookie(res: Response, name: string, value: string, options: SerializeOptions): void {
  res.append("Set-Cookie", stringifySetCookie(name, value, options));
}
