// One JSON POST for the channels that speak HTTP (webhook, ntfy, Discord): a timeout, the receiver's
// answer quoted (scrubbed) in the error, and a 429's Retry-After carried on the error as a wish to be
// delayed, so the digest job waits in the queue without spending an attempt (src/queue/worker-host.ts)
// instead of the channel sleeping and trying again itself.
import { scrubString } from "../../redact.ts";
import type { DigestChannel } from "../../config/digest.ts";

/** The receiver refused the message or could not be reached; `status` is absent when no answer came. */
export class ChannelDeliveryError extends Error {
  /** Set for a 429: the queue delays the job by retryAfterMs (src/queue/job-definition.ts JobOutcomeFields). */
  readonly jobOutcome: "delay" | undefined;
  constructor(
    message: string,
    readonly channel: DigestChannel,
    readonly status: number | undefined,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = "ChannelDeliveryError";
    this.jobOutcome = retryAfterMs === undefined ? undefined : "delay";
  }
}

/** When no answer says how long to wait after a 429. */
const DEFAULT_RETRY_AFTER_MS = 5_000;

/**
 * How long a 429 asks to wait: the body's `retry_after` (seconds, fractions allowed: Discord's form), else
 * the Retry-After header (seconds or an HTTP date), else 5 s.
 */
export function retryAfterMsOf(headers: Headers, body: string, now: number): number {
  try {
    const seconds = (JSON.parse(body) as { retry_after?: unknown }).retry_after;
    if (typeof seconds === "number" && Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  } catch {
    /* not JSON: read the header */
  }
  const header = headers.get("retry-after")?.trim();
  if (header && /^\d+(\.\d+)?$/.test(header)) return Math.ceil(Number(header) * 1000);
  const at = header ? Date.parse(header) : Number.NaN;
  if (!Number.isNaN(at)) return Math.max(0, at - now);
  return DEFAULT_RETRY_AFTER_MS;
}

export type ChannelPost = {
  channel: DigestChannel;
  url: string;
  /** What error messages call the receiver (never a URL that carries a token). */
  receiver: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs?: number;
  now?: () => number;
};

/** The receiver's status, and the id it gave the message when its answer is JSON with one (ntfy, Discord). */
export type ChannelAnswer = { status: number; id?: string };

function idOf(body: string): string | undefined {
  try {
    const id = (JSON.parse(body) as { id?: unknown } | null)?.id;
    return typeof id === "string" ? id : undefined;
  } catch {
    return undefined;
  }
}

export async function postToChannel(post: ChannelPost): Promise<ChannelAnswer> {
  let response: Response;
  try {
    response = await fetch(post.url, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8", ...post.headers },
      body: post.body,
      signal: AbortSignal.timeout(post.timeoutMs ?? 30_000),
      // A followed 301 or 302 turns the POST into a GET (the Fetch standard), whose 200 would count as
      // delivered while nothing was posted: a redirect is an answer to report instead.
      redirect: "manual",
    });
  } catch (err) {
    const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
    throw new ChannelDeliveryError(
      `${post.receiver} unreachable: ${scrubString(cause?.code ?? cause?.message ?? (err as Error).message)}`,
      post.channel,
      undefined,
    );
  }
  const answer = await response.text().catch(() => "");
  if (response.status >= 300 && response.status < 400) {
    // Only where it points: the rest of the address may carry the receiver's token.
    const to = URL.parse(response.headers.get("location") ?? "", post.url);
    throw new ChannelDeliveryError(
      `${post.receiver} answered ${response.status}, a redirect${to ? ` to ${to.protocol}//${to.host}/…` : ""}: set the address it redirects to (https:// rather than http://?) in the channel's setting`,
      post.channel,
      response.status,
    );
  }
  if (response.ok) {
    const id = idOf(answer);
    return { status: response.status, ...(id ? { id } : {}) };
  }
  const quoted = answer.slice(0, 300);
  const retryAfterMs = response.status === 429 ? retryAfterMsOf(response.headers, answer, (post.now ?? Date.now)()) : undefined;
  throw new ChannelDeliveryError(
    `${post.receiver} answered ${response.status}${quoted ? `: ${scrubString(quoted)}` : ""}${retryAfterMs === undefined ? "" : ` (retrying in ${Math.ceil(retryAfterMs / 1000)} s)`}`,
    post.channel,
    response.status,
    retryAfterMs,
  );
}
