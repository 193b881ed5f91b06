// The classified errors a CDN transfer ends with (src/downloads/transfer.ts): what the job's retry, the row's
// long-term retry (retry.ts) and the summary read.
import { describeBound, type BoundTripped } from "../api/body-guard.ts";
import { formatBytes } from "../text/bytes.ts";

/** The CDN answered with something a retry may fix (5xx, 429, a reset mid-body). */
export class TransferError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = "TransferError";
  }
}

/**
 * A bound tripped: too slow or too large. Either way transient for the row: the job's next attempt resumes
 * a slow transfer by Range, and the row's long-term retry (retry.ts) tries a large one again later.
 */
export class TransferBoundError extends TransferError {
  constructor(readonly bound: BoundTripped | { kind: "deadline"; seconds: number; bytesPerSecond: number }) {
    super(
      bound.kind === "deadline"
        ? `timed out after ${bound.seconds} s at ${(bound.bytesPerSecond / 1024).toFixed(1)} KiB/s (the transfer's deadline)`
        : bound.kind === "too_large"
          ? `file too large: more than ${formatBytes(bound.maxBytes)} arrived with no size announced; raise DVAULT_RENDITION_MAX_BYTES if this file is real`
          : describeBound(bound),
      undefined,
      true,
    );
    this.name = "TransferBoundError";
  }
}

/** A redirect to a host outside the CDN family: never followed, and waiting does not change it. */
export class RedirectRefusedError extends TransferError {
  constructor(
    readonly from: string,
    readonly to: string,
  ) {
    super(`the CDN redirected from ${from} to ${to}, which is not a host of the service's CDN (DVAULT_CDN_HOSTS): refused`, undefined, false);
    this.name = "RedirectRefusedError";
  }
}
