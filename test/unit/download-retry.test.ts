// Which download failures are retried later, and after how long: the delay grows with each failure in a
// row and stops at a day; a refusal that waiting cannot change is never retried on its own.
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/api/errors.ts";
import { RETRY_DELAYS_MS, isPermanentFailure, retryDelayMs } from "../../src/downloads/retry.ts";
import { TransferError } from "../../src/downloads/transfer.ts";

describe(retryDelayMs.name, () => {
  it("grows from minutes to hours and is capped at a day", () => {
    const delays = [1, 2, 3, 4, 5, 6, 50].map((n) => retryDelayMs(n));
    expect(delays).toEqual([15 * 60_000, 3_600_000, 4 * 3_600_000, 12 * 3_600_000, 86_400_000, 86_400_000, 86_400_000]);
    for (let i = 1; i < RETRY_DELAYS_MS.length; i++) expect(RETRY_DELAYS_MS[i]!).toBeGreaterThan(RETRY_DELAYS_MS[i - 1]!);
    expect(Math.max(...RETRY_DELAYS_MS)).toBe(86_400_000);
    expect(retryDelayMs(0)).toBe(15 * 60_000);
  });
});

describe(isPermanentFailure.name, () => {
  const api = (kind: ConstructorParameters<typeof ApiError>[0]["kind"]) => new ApiError({ kind, operation: "deviation.download" });
  it("retries transient faults and an account waiting for its re-login", () => {
    for (const kind of ["throttled", "server", "malformed", "network", "invalid_token", "insufficient_scope"] as const)
      expect(isPermanentFailure(api(kind)), kind).toBe(false);
    expect(isPermanentFailure(new TransferError("the CDN answered HTTP 503", 503, true))).toBe(false);
    expect(isPermanentFailure(new Error("ECONNRESET"))).toBe(false);
  });
  it("does not retry what waiting cannot change", () => {
    for (const kind of ["not_found", "client", "gone"] as const) expect(isPermanentFailure(api(kind)), kind).toBe(true);
    expect(isPermanentFailure(new TransferError("the CDN answered HTTP 400", 400, false))).toBe(true);
  });
});
