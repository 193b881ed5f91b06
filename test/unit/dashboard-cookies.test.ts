// The dashboard's cookies through the `cookie` package: what a request sends is read by name, a value that is
// not valid percent-encoding stays as sent (so it never equals a token), and Set-Cookie keeps its attributes.
import type { Request, Response } from "express";
import { describe, expect, it } from "vitest";
import { CSRF_COOKIE, readCookie, setCookie, TOKEN_COOKIE } from "../../src/http/cookies.ts";

const request = (cookie?: string) => ({ headers: cookie === undefined ? {} : { cookie } }) as Request;

describe(readCookie.name, () => {
  it("reads a cookie by name and decodes it", () => {
    expect(readCookie(request(`other=1; ${TOKEN_COOKIE}=to%20ken%2F; ${CSRF_COOKIE}=abc.def`), TOKEN_COOKIE)).toBe("to ken/");
    expect(readCookie(request(`${CSRF_COOKIE}=abc.def`), CSRF_COOKIE)).toBe("abc.def");
    expect(readCookie(request(), TOKEN_COOKIE)).toBeUndefined();
    expect(readCookie(request("garbage; =x"), TOKEN_COOKIE)).toBeUndefined();
  });

  it("keeps a value that does not decode as sent", () => {
    expect(readCookie(request(`${TOKEN_COOKIE}=%E0%A4%A`), TOKEN_COOKIE)).toBe("%E0%A4%A");
  });
});

describe(setCookie.name, () => {
  it("writes an encoded value with the attributes asked for", () => {
    const headers: string[] = [];
    const res = { append: (name: string, value: string) => headers.push(`${name}: ${value}`) } as unknown as Response;
    setCookie(res, TOKEN_COOKIE, "to ken/", { path: "/", httpOnly: true, sameSite: "lax", maxAge: 60 });
    setCookie(res, CSRF_COOKIE, "abc.def", { path: "/", httpOnly: true, sameSite: "strict" });
    expect(headers).toEqual([
      `Set-Cookie: ${TOKEN_COOKIE}=to%20ken%2F; Max-Age=60; Path=/; HttpOnly; SameSite=Lax`,
      `Set-Cookie: ${CSRF_COOKIE}=abc.def; Path=/; HttpOnly; SameSite=Strict`,
    ]);
  });
});
