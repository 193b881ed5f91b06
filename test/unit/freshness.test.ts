// What a refusal of /deviation/{deviationid} says about a work (docs/service-behaviour.md#deleted-deviation-lookup),
// and how an incremental run tells which works left a listing (src/sync/sources/freshness.ts).
import { describe, expect, it } from "vitest";
import { errorFromResponse, malformedError, networkError, ThrottleDelayError } from "../../src/api/errors.ts";
import { memberPosition } from "../../src/sync/sources/folder-plan.ts";
import { fullCheckReasons, leftTheTop } from "../../src/sync/sources/freshness.ts";
import { judgeLookup } from "../../src/sync/sources/vanished.ts";

const body = (o: Record<string, unknown>) => JSON.stringify({ ...o, status: "error" });
const lookup = (status: number, text: string | undefined) => errorFromResponse({ operation: "deviation.get", status, body: text });
const notFound = (code?: number) =>
  body({ error: "invalid_request", error_description: "Deviation not found.", ...(code === undefined ? {} : { error_code: code }) });

describe(judgeLookup.name, () => {
  it.each([
    // error_code 0 is the catalogue's "not_found" for deviation.get: the answer says not found.
    { status: 400, text: notFound(0), reason: "deleted", code: 0 },
    // A 404 that carries an error_code is about the object, not the endpoint.
    { status: 404, text: notFound(0), reason: "deleted", code: 0 },
    // Any other code, or none, is a refusal that does not say not found: gone all the same.
    { status: 400, text: notFound(1), reason: "unavailable", code: 1 },
    { status: 400, text: notFound(2), reason: "unavailable", code: 2 },
    { status: 400, text: notFound(77), reason: "unavailable", code: 77 },
    { status: 400, text: notFound(), reason: "unavailable", code: null },
    // The description is never read: the same code with another text is judged the same.
    { status: 400, text: body({ error: "invalid_request", error_description: "Something else.", error_code: 0 }), reason: "deleted", code: 0 },
    { status: 400, text: body({ error: "invalid_request", error_description: "Deviation not found?" }), reason: "unavailable", code: null },
  ])("HTTP $status error_code $code: gone, $reason, with the answer kept", ({ status, text, reason, code }) => {
    const verdict = judgeLookup(lookup(status, text));
    expect(verdict).toEqual({
      kind: "gone",
      reason,
      answer: { status, error: "invalid_request", error_code: code, error_description: JSON.parse(text).error_description },
    });
  });

  it.each([
    {
      what: "the lookup removed (404 Api endpoint not found.)",
      err: lookup(404, body({ error: "invalid_request", error_description: "Api endpoint not found." })),
      stop: false,
    },
    { what: "a throttle", err: lookup(429, body({ error: "user_api_threshold", error_description: "User request limit reached." })), stop: true },
    {
      what: "the pacer's hold",
      err: new ThrottleDelayError({ operation: "deviation.get", waitMs: 1000, pacerKey: "1001:U", retryAt: 1 }),
      stop: true,
    },
    { what: "a CDN block", err: lookup(403, "<html>Request blocked.</html>"), stop: true },
    // A 500 may be the work's own (Asking ends the asking at a second in a row).
    { what: "a 500", err: lookup(500, body({ error: "server_error", error_description: "Internal server error" })), stop: false },
    { what: "a 503", err: lookup(503, undefined), stop: true },
    // Read twice and kept, the answer may be this work's own (Asking ends the asking at a second in a row); cut short, the service failing.
    { what: "an unreadable answer", err: malformedError({ operation: "deviation.get", detail: "unexpected shape", final: true }), stop: false },
    { what: "an answer cut short", err: malformedError({ operation: "deviation.get", detail: "not JSON" }), stop: true },
    { what: "no answer", err: networkError({ operation: "deviation.get", code: "ECONNRESET" }), stop: true },
    // A refusal that is not invalid_request is not an answer about the work either.
    { what: "another refusal", err: lookup(400, body({ error: "version_error", error_description: "?" })), stop: false },
  ])("$what: not settled, left as it is", ({ err, stop }) => {
    expect(judgeLookup(err)).toMatchObject({ kind: "unsettled", stop });
  });

  it("names a removed lookup, so the source degrades with it", () => {
    const verdict = judgeLookup(lookup(404, body({ error: "invalid_request", error_description: "Api endpoint not found." })));
    expect(verdict).toMatchObject({
      kind: "unsettled",
      endpointGone: "deviation.get",
      cause: "deviation.get removed by the service (404 Api endpoint not found.)",
    });
  });

  it("throws on what concerns the account, not the work, and on anything that is not the service's answer", () => {
    const expired = lookup(401, body({ error: "invalid_token", error_description: "Expired oAuth2 user token." }));
    expect(() => judgeLookup(expired)).toThrow(expired);
    const scope = lookup(403, body({ error: "insufficient_scope", error_description: "…", scope: "browse" }));
    expect(() => judgeLookup(scope)).toThrow(scope);
    const bug = new TypeError("x is undefined");
    expect(() => judgeLookup(bug)).toThrow(bug);
  });
});

describe(leftTheTop.name, () => {
  const before = ["a", "b", "c", "d", "e"];
  it.each([
    { what: "nothing changed", page: ["a", "b", "c", "d", "e"], fresh: 0, ended: false, left: [] },
    { what: "new works pushed the last one down", page: ["n", "a", "b", "c", "d"], fresh: 1, ended: false, left: [] },
    { what: "one went from the middle", page: ["a", "c", "d", "e", "f"], fresh: 0, ended: false, left: ["b"] },
    { what: "the first went", page: ["b", "c", "d", "e", "f"], fresh: 0, ended: false, left: ["a"] },
    // Nothing new arrived, so the last one was not pushed down: it went.
    { what: "the last went", page: ["a", "b", "c", "d", "f"], fresh: 0, ended: false, left: ["e"] },
    // One new at the top and one gone from the middle: the missing last one may only have been pushed down.
    { what: "a new one and a gone one", page: ["n", "a", "c", "d", "e"], fresh: 1, ended: false, left: ["b"] },
    { what: "the view ends on this page", page: ["n", "a", "b", "c"], fresh: 1, ended: true, left: ["d", "e"] },
    { what: "no earlier page to compare with", page: ["a"], fresh: 0, ended: true, left: [], before: [] },
  ])("$what", ({ page, fresh, ended, left, ...rest }) => {
    expect(leftTheTop(page, rest.before ?? before, { fresh, ended })).toEqual(left);
  });
});

describe(fullCheckReasons.name, () => {
  const folders = [{ folderid: "F1", name: "One", size: 3 }];
  it("asks about every work only where no listing can say which went", () => {
    expect(fullCheckReasons({ folders, sizes: { F1: 4 }, profileCount: 10, lastProfileCount: 10 })).toEqual({ reasons: [], profileDrop: 0 });
    expect(fullCheckReasons({ folders, sizes: { F1: 4 }, profileCount: 9, lastProfileCount: 11 })).toEqual({ reasons: [], profileDrop: 2 });
    expect(fullCheckReasons({ folders, sizes: { F1: 4 }, profileCount: 12, lastProfileCount: 11 })).toEqual({ reasons: [], profileDrop: 0 });
    expect(fullCheckReasons({ folders, sizes: { F1: 4 }, profileCount: null, lastProfileCount: 11 })).toEqual({ reasons: [], profileDrop: 0 });
    expect(fullCheckReasons({ folders, sizes: { F1: 4, F2: 1 }, profileCount: 10, lastProfileCount: undefined })).toEqual({
      reasons: ["folder F2 left the folder list"],
      profileDrop: 0,
    });
  });
});

describe(memberPosition.name, () => {
  it("counts from the folder's end, so ascending positions read the folder in the service's order", () => {
    const size = 4;
    const positions = [0, 1, 2, 3].map((ordinal) => memberPosition(size, ordinal));
    expect(positions).toEqual([-4, -3, -2, -1]);
    // A new work at the top: the folder grows by one, and every older member keeps its number.
    expect([1, 2, 3, 4].map((ordinal) => memberPosition(size + 1, ordinal))).toEqual(positions);
    expect(memberPosition(size + 1, 0)).toBeLessThan(positions[0] as number);
    // Size unknown: the ordinal stands in until the walk reaches the end.
    expect(memberPosition(null, 2)).toBe(2);
  });
});
