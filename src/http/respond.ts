// How every route answers: the content policies (a page's, a file's, everything else's), a page sent in the
// browser's theme (src/http/theme.ts), and one trimmed value of a query or form field. It imports nothing of
// the dashboard's context (src/http/context.ts), so the CSRF check and the guards, which the context holds,
// can use it.
import type { Response } from "express";
import { themeOf, withTheme } from "./theme.ts";

// Scripts only from dvault itself (/assets/app.<hash>.js): no inline script, no eval; style attributes stay
// allowed for the progress bars' widths.
const PAGE_CSP =
  "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self'; style-src 'self' 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/**
 * Every other answer (JSON, Atom, text, a redirect, a refusal): nothing loads, runs or frames it. Set before
 * any route (src/http/guards.ts), so no path goes without a policy; pages and files replace it with theirs.
 */
export const ANSWER_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
/** For archived files and the static images: nothing runs, even in an SVG opened on its own. */
export const FILE_CSP = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; sandbox";

/**
 * Sends one of dvault's pages with the page policy, in the theme the browser chose (src/http/theme.ts);
 * `formTargets` are origins a form of the page may lead to besides the dashboard (browsers check the redirect a
 * form's POST answers with too: Connect's to the service).
 */
export function sendPage(res: Response, status: number, body: string, formTargets: readonly string[] = []): void {
  const csp = formTargets.length ? PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${formTargets.join(" ")}`) : PAGE_CSP;
  res
    .status(status)
    .set("Content-Security-Policy", csp)
    .type("html")
    .send(withTheme(body, themeOf(res.req)));
}

/** One trimmed, non-empty value of a query or form field. */
export function one(value: unknown): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === "string" && v.trim() !== "" ? v.trim() : undefined;
}
