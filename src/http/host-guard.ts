// Which host names the dashboard answers for. A DNS-rebinding page (evil.example resolved to 127.0.0.1)
// reaches the dashboard's socket but names its own host in the Host header and in Origin; answering only
// for the names below makes such a request fail before any handler runs, token or not.
import { isIP, isIPv6 } from "node:net";
import os from "node:os";
import type { RequestHandler } from "express";
import type { Logger } from "../log.ts";

export type HostGuard = {
  /** Whether a host (a Host header, an origin's host, a listed name; any port ignored) names this dashboard. */
  allows(host: string | undefined): boolean;
  /** The names it answers for, for messages: "localhost, 127.0.0.0/8, [::1], archive.example.org". */
  readonly listed: string;
  /** 421 Misdirected Request for a foreign or missing Host, before anything else runs. */
  readonly middleware: RequestHandler;
};

export type HostGuardOptions = {
  /** The address the server listens on; 0.0.0.0 and :: mean every interface. */
  bindHost: string;
  /** DVAULT_PUBLIC_URL: its host is the name people use behind a proxy. */
  publicUrl?: string | undefined;
  /** DVAULT_HTTP_ALLOWED_HOSTS. */
  allowedHosts: readonly string[];
  log: Logger;
};

/** 127.0.0.0/8, ::1 and localhost: reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, "");
  return (
    h === "localhost" ||
    h === "::1" ||
    h === "0:0:0:0:0:0:0:1" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) ||
    /^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) ||
    /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(h)
  );
}

/**
 * The host name in a Host header, an origin's host or a configured name: lowercase, without the port, an
 * IPv6 address without brackets and in its canonical form, a trailing dot dropped. Undefined when it is
 * not a host name (spaces, "a@b", a path ...), so such a Host is refused rather than guessed at.
 */
export function hostName(value: string | undefined): string | undefined {
  const v = value?.trim().toLowerCase();
  if (!v) return undefined;
  if (isIPv6(v)) return canonicalIPv6(v);
  const m = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9_-]+(?:\.[a-z0-9_-]+)*)\.?)(?::\d{1,5})?$/.exec(v);
  if (!m) return undefined;
  if (m[1] !== undefined) return isIPv6(m[1]) ? canonicalIPv6(m[1]) : undefined;
  return m[2];
}

function canonicalIPv6(address: string): string {
  return new URL(`http://[${address}]/`).hostname.slice(1, -1);
}

const shown = (name: string) => (isIPv6(name) ? `[${name}]` : name);

function isEveryInterface(name: string | undefined): boolean {
  return name === "0.0.0.0" || name === "::";
}

/** This machine's interface addresses, read when asked: DHCP may change them while the worker runs. */
function interfaceAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) {
      const name = hostName(a.address);
      if (name) out.add(name);
    }
  }
  return out;
}

export function createHostGuard(options: HostGuardOptions): HostGuard {
  const bind = hostName(options.bindHost);
  const everyInterface = isEveryInterface(bind);
  const names = new Set<string>();
  if (bind && !everyInterface && !isLoopbackHost(bind)) names.add(bind);
  const publicHost = options.publicUrl ? hostName(new URL(options.publicUrl).host) : undefined;
  if (publicHost) names.add(publicHost);
  for (const raw of options.allowedHosts) {
    const name = hostName(raw);
    if (name) names.add(name);
  }

  const allows = (host: string | undefined): boolean => {
    const name = hostName(host);
    if (!name) return false;
    if (isLoopbackHost(name) || names.has(name)) return true;
    // Bound to every interface, the machine's own addresses are accepted too (read per request, only for an
    // address literal not listed). An address literal cannot be rebound: a page whose Host is 192.168.1.10
    // was loaded from 192.168.1.10, i.e. from this dashboard, so this adds no rebinding exposure, and it
    // spares the operator listing addresses that DHCP may change. Names (nas.local) must still be listed.
    return everyInterface && isIP(name) !== 0 && interfaceAddresses().has(name);
  };

  const listed = ["localhost", "127.0.0.0/8", "[::1]", ...[...names].map(shown), ...(everyInterface ? ["this machine's addresses"] : [])].join(", ");
  // The names themselves stay out of the answer: a rebinding page can read it, and the public URL's host
  // is none of its business. The operator finds them in the configuration.
  const refusal = "dvault: this dashboard does not answer for that host name; add it to DVAULT_HTTP_ALLOWED_HOSTS (or set DVAULT_PUBLIC_URL) to use it\n";

  const middleware: RequestHandler = (req, res, next) => {
    // An absolute-form target (GET http://name/ HTTP/1.1) names the host itself; HTTP says it wins over Host.
    const absolute = /^[a-z][a-z0-9+.-]*:\/\//i.test(req.url) ? safeUrlHost(req.url) : undefined;
    const host = absolute ?? req.headers.host;
    if (allows(host)) return next();
    options.log.warn({ method: req.method, host: host?.slice(0, 200), answersFor: listed }, "dashboard: request for a foreign host refused");
    return res.status(421).type("text").send(refusal);
  };

  return { allows, listed, middleware };
}

function safeUrlHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return ""; // refused: no host name
  }
}
