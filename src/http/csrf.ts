// dvault's own state changes are POSTs that carry a signed double-submit CSRF token: the page's cookie and a
// form field, both signed with a key of this process (the failed-jobs buttons, "Sync now", "Download now"). The line
// each answers with rides on its redirect signed with that key too, so a link cannot put words on a dvault page.
import { createHmac, randomBytes } from "node:crypto";
import express, { type NextFunction, type Request, type RequestHandler, type Response } from "express";
import type { Logger } from "../log.ts";
import { one } from "./respond.ts";
import { CSRF_COOKIE, readCookie, setCookie } from "./cookies.ts";
import { sameSecret } from "./guards.ts";

export type Csrf = {
  /** The page's CSRF token: the cookie's when it is valid, else a new one set as the cookie. */
  tokenFor(req: Request, res: Response): string;
  /** Parses the form and refuses (403) a POST whose field and cookie are not the same valid token. */
  guard: RequestHandler[];
  /** `done` and `sig`: the line a button's redirect carries to the page it lands on, signed with the same key. */
  notice(text: string): { done: string; sig: string };
  /** The page's signed `done` line; one a link from elsewhere wrote (`/?done=…` saying anything) is not shown. */
  noticeOf(req: Request): string | undefined;
};

export function createCsrf(log: Logger): Csrf {
  const key = randomBytes(32);
  const sign = (nonce: string) => `${nonce}.${createHmac("sha256", key).update(nonce).digest("base64url")}`;
  // Its own prefix, so a notice's signature is never a CSRF token's.
  const signNotice = (text: string) => createHmac("sha256", key).update(`notice\0${text}`).digest("base64url");
  const valid = (value: string | undefined) => {
    if (!value) return false;
    const nonce = value.split(".")[0] ?? "";
    return /^[A-Za-z0-9_-]{16,}$/.test(nonce) && sameSecret(value, sign(nonce));
  };
  const form = express.urlencoded({ extended: false, limit: "8kb", parameterLimit: 20 });
  const requireCsrf = (req: Request, res: Response, next: NextFunction) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const sent = one(body._csrf);
    const cookie = readCookie(req, CSRF_COOKIE);
    if (!sent || !cookie || !valid(sent) || !sameSecret(sent, cookie)) {
      log.warn({ path: req.path }, "dashboard: request without a valid CSRF token refused");
      return res.status(403).type("text").send("dvault: missing or invalid CSRF token; reload the page and try again\n");
    }
    return next();
  };
  return {
    tokenFor(req, res) {
      const existing = readCookie(req, CSRF_COOKIE);
      if (existing !== undefined && valid(existing)) return existing;
      // One new token per answer, however many of its forms ask (the overview's buttons and its boxes).
      if (typeof res.locals.csrf === "string") return res.locals.csrf;
      const fresh = sign(randomBytes(18).toString("base64url"));
      setCookie(res, CSRF_COOKIE, fresh, { path: "/", httpOnly: true, sameSite: "strict" });
      res.locals.csrf = fresh;
      return fresh;
    },
    guard: [form, requireCsrf],
    notice: (text) => ({ done: text, sig: signNotice(text) }),
    noticeOf(req) {
      const { done, sig } = req.query;
      return typeof done === "string" && typeof sig === "string" && sameSecret(sig, signNotice(done)) ? done.trim() || undefined : undefined;
    },
  };
}
