import { describe, expect, it } from "vitest";
import {
  ApiError,
  EndpointGoneError,
  ThrottleDelayError,
  classifyStatus,
  errorFromResponse,
  isMissing,
  isPermanent,
  malformedError,
  networkError,
  parseErrorBody,
} from "../../src/api/errors.ts";
import { delayOf, isRemoteServiceError, isStop } from "../../src/queue/job-definition.ts";
import { registerSecret } from "../../src/redact.ts";

const body = (o: Record<string, unknown>) => JSON.stringify({ ...o, status: "error" });
const CDN_HTML =
  "<!DOCTYPE HTML><HTML><HEAD><TITLE>ERROR: The request could not be satisfied</TITLE></HEAD><BODY><H1>403 ERROR</H1>Request blocked.</BODY></HTML>";

describe(ApiError.name, () => {
  it.each([
    [401, body({ error: "invalid_token", error_description: "Expired oAuth2 user token." }), "invalid_token"],
    [403, body({ error: "insufficient_scope", error_description: "…", scope: "browse" }), "insufficient_scope"],
    [404, body({ error: "invalid_request", error_description: "Api endpoint not found." }), "gone"],
    // A 404 without an error_code is the route itself missing, whatever its text says.
    [404, body({ error: "invalid_request", error_description: "Deviation not found." }), "gone"],
    [404, body({ error: "invalid_request", error_description: "Deviation not found.", error_code: 0 }), "not_found"],
    // Without the operation's code table, a coded 400 is a plain refusal: the text is never read.
    [400, body({ error: "invalid_request", error_description: "User not found.", error_code: 2 }), "client"],
    [429, body({ error: "user_api_threshold", error_description: "User request limit reached." }), "throttled"],
    [429, body({ error: "application_api_threshold", error_description: "Client request limit reached." }), "throttled"],
    [403, CDN_HTML, "throttled"],
    [503, "<html>maintenance</html>", "throttled"],
    [500, body({ error: "server_error", error_description: "Internal server error" }), "server"],
    [502, "Bad Gateway", "server"],
    [400, body({ error: "invalid_request", error_description: "Request field validation failed.", error_details: { limit: "x" } }), "client"],
    [403, body({ error: "invalid_request", error_description: "Forbidden." }), "client"],
    [400, body({ error: "invalid_request", error_description: "Free download limit reached.", error_code: 2 }), "client"],
  ])("classifies HTTP %i %s as %s", (status, text, kind) => {
    expect(classifyStatus(status, parseErrorBody(text))).toBe(kind);
    expect(errorFromResponse({ operation: "op", status, body: text }).kind).toBe(kind);
  });

  it.each([
    ["user.profile", body({ error: "invalid_request", error_description: "Account is inactive.", error_code: 1 }), "user_unavailable", "user_deactivated"],
    ["user.profile", body({ error: "invalid_request", error_description: "Whatever wording", error_code: 0 }), "user_unavailable", "user_suspended"],
    ["user.profile", body({ error: "invalid_request", error_description: "User not found.", error_code: 2 }), "user_unavailable", "user_not_found"],
    // The profile lookup's only parameter is the username: a bare refusal is about the user.
    ["user.profile", body({ error: "invalid_request", error_description: "Something else." }), "user_unavailable", "user_not_found"],
    ["gallery.all", body({ error: "invalid_request", error_description: "Account is inactive.", error_code: 1 }), "user_unavailable", "user_deactivated"],
    // The same text without the code is not read as a user state.
    ["gallery.all", body({ error: "invalid_request", error_description: "Account is inactive." }), "client", undefined],
    ["deviation.get", body({ error: "invalid_request", error_description: "Deviation not found.", error_code: 0 }), "not_found", "not_found"],
    ["deviation.download", body({ error: "invalid_request", error_description: "Free download limit reached.", error_code: 2 }), "client", "download_refused"],
    ["deviation.content", body({ error: "invalid_request", error_description: "Unsupported deviation type.", error_code: 1 }), "client", "unsupported_type"],
  ])("reads %s's error_code from the catalogue: %s is %s (%s)", (operation, text, kind, meaning) => {
    const err = errorFromResponse({ operation, status: 400, body: text });
    expect(err.kind).toBe(kind);
    expect(err.meaning).toBe(meaning);
    expect(isPermanent(err)).toBe(true);
    expect(err.message).not.toContain("bug in dvault");
  });

  it("names the error_code it branched on, beside the service's words", () => {
    const err = errorFromResponse({
      operation: "user.profile",
      status: 400,
      body: body({ error: "invalid_request", error_description: "Something new.", error_code: 7 }),
    });
    expect(err.kind).toBe("client");
    expect(err.message).toContain('(HTTP 400 invalid_request error_code 7 "Something new.")');
  });

  it("keeps the service's fields and says which scope to grant", () => {
    const err = errorFromResponse({
      operation: "user.whoami",
      status: 403,
      account: "alice",
      body: body({ error: "insufficient_scope", error_description: "needs more", scope: "user" }),
    });
    expect(err).toMatchObject({ kind: "insufficient_scope", status: 403, error: "insufficient_scope", requiredScope: "user", account: "alice" });
    expect(err.message).toContain("user.whoami");
    expect(err.message).toContain("dvault auth login --scopes user");
    // --scopes adds to the read scopes login always asks for (auth login --help): listing those again is not needed.
    expect(err.message).toContain("(the read scopes are always asked for; add any other scope you use)");
    expect(isPermanent(err)).toBe(true);
  });

  it("parses error_code, error_details and a string error_code", () => {
    const err = errorFromResponse({
      operation: "gallery.folder",
      status: 400,
      body: body({
        error: "invalid_request",
        error_description: "Request field validation failed.",
        error_details: { limit: "limit is not within the allowed range" },
        error_code: "3",
      }),
    });
    expect(err.errorCode).toBe(3);
    expect(err.errorDetails).toEqual({ limit: "limit is not within the allowed range" });
    expect(err.message).toContain("limit: limit is not within the allowed range");
    expect(isPermanent(err)).toBe(true);
  });

  it("turns a removed endpoint into an EndpointGoneError callers can skip", () => {
    const err = errorFromResponse({
      operation: "browse.deviantsyouwatch",
      status: 404,
      body: body({ error: "invalid_request", error_description: "Api endpoint not found." }),
    });
    expect(err).toBeInstanceOf(EndpointGoneError);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.message).toContain("browse.deviantsyouwatch");
  });

  it("marks a CDN block as a throttle, not a permission problem", () => {
    const err = errorFromResponse({ operation: "gallery.all", status: 403, body: CDN_HTML });
    expect(err.kind).toBe("throttled");
    expect(err.error).toBe("cdn_block");
    expect(err.message).toMatch(/CDN/);
    expect(isPermanent(err)).toBe(false);
  });

  it("says retries won't help for transient kinds only", () => {
    expect(isPermanent(errorFromResponse({ operation: "op", status: 500 }))).toBe(false);
    expect(isPermanent(errorFromResponse({ operation: "op", status: 401 }))).toBe(true);
    expect(isPermanent(networkError({ operation: "op", code: "ECONNRESET" }))).toBe(false);
    expect(isPermanent(malformedError({ operation: "op", detail: "not JSON" }))).toBe(false);
    expect(isPermanent(new Error("other"))).toBe(false);
  });

  it("names the operation in a malformed-body error", () => {
    const err = malformedError({ operation: "deviation.metadata", detail: 'not JSON: "<html>"' });
    expect(err.kind).toBe("malformed");
    expect(err.message).toContain("deviation.metadata");
    expect(err.message).toContain("not JSON");
  });

  it("carries the wait and the pacer key on a ThrottleDelayError", () => {
    const err = new ThrottleDelayError({
      operation: "gallery.all",
      status: 429,
      error: "user_api_threshold",
      waitMs: 4000,
      pacerKey: "123:u1",
      retryAt: 10_000,
    });
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ kind: "throttled", waitMs: 4000, pacerKey: "123:u1", retryAt: 10_000 });
    expect(err.message).toContain("4.0 s");
    expect(err.message).toContain("per-user request limit");
    expect(isPermanent(err)).toBe(false);
  });

  it("never puts a token into a message", () => {
    const token = "at-secret-0123456789abcdef";
    registerSecret(token);
    const err = errorFromResponse({ operation: "op", status: 400, body: body({ error: "invalid_request", error_description: `bad access_token=${token}` }) });
    expect(err.message).not.toContain(token);
    expect(err.errorDescription).not.toContain(token);
    const m = malformedError({ operation: "op", detail: `not JSON: "Bearer ${token}"` });
    expect(m.message).not.toContain(token);
  });
});

describe("the job outcome an ApiError asks for", () => {
  it("stops on a permanent failure, retries a transient one, delays a throttle without spending an attempt", () => {
    const notFound = new ApiError({ kind: "not_found", operation: "deviation.get", status: 400, errorCode: 0 });
    const server = new ApiError({ kind: "server", operation: "gallery.all", status: 503 });
    const throttle = new ThrottleDelayError({ operation: "gallery.all", status: 429, waitMs: 4000, pacerKey: "123:u1", retryAt: 10_000 });
    expect([isStop(notFound), isStop(server), isStop(throttle)]).toEqual([true, false, false]);
    expect(delayOf(throttle)).toEqual({ waitMs: 4000, key: "123:u1", reason: "throttled" });
    expect(delayOf(server)).toBeUndefined();
    expect([notFound, server, throttle].map(isRemoteServiceError)).toEqual([true, true, true]);
    expect(isRemoteServiceError(new Error("Connection terminated unexpectedly"))).toBe(false);
  });
});

describe(isMissing.name, () => {
  it("counts a bare refusal as missing only when asked to (ids the service handed out earlier)", () => {
    const refusal = new ApiError({ kind: "client", operation: "messages.feedback.stack", status: 400 });
    const notFound = new ApiError({ kind: "not_found", operation: "deviation.get", status: 400, errorCode: 0 });
    const scope = new ApiError({ kind: "insufficient_scope", operation: "notes.list", status: 403 });
    expect([isMissing(refusal), isMissing(notFound), isMissing(scope)]).toEqual([false, true, false]);
    expect([refusal, notFound, scope].map((e) => isMissing(e, { refusalMeansMissing: true }))).toEqual([true, true, false]);
    expect(isMissing(new Error("not an API error"), { refusalMeansMissing: true })).toBe(false);
  });
});
