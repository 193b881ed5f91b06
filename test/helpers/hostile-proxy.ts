// A small hostile proxy in front of the simulator (docs/service-behaviour.md#hostile-answers): it forwards
// every request over real sockets and, where a rule matches, answers in a way the service might on a bad
// day or an attacker would: an endless body, a trickle, a body cut short, text rewritten, a redirect to
// another host, an answer of its own. The simulator itself never does these; the proxy is outside it, so the
// simulator stays a model of what the service allows. URLs of the simulator in JSON answers are rewritten
// to the proxy's, so downloads come through it too.
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export type HostileAct =
  /** 200 with no Content-Length and bytes until the client hangs up. */
  | { kind: "endless"; contentType?: string }
  /** The upstream answer, sent at `bytesPerSecond` (headers at once, Content-Length kept). */
  | { kind: "trickle"; bytesPerSecond: number }
  /** The upstream answer's first `bytes` bytes with a Content-Length claiming all, then the socket closed. */
  | { kind: "truncate"; bytes: number }
  /** The upstream answer's body rewritten (JSON as text). */
  | { kind: "rewrite"; transform: (body: string, path: string) => string }
  /** A 302 to `location(path)`. */
  | { kind: "redirect"; location: (path: string) => string }
  /** This answer instead of the upstream's (the request is not forwarded). */
  | { kind: "answer"; status: number; body: string; contentType?: string };

export type HostileRule = {
  /** Path (with query) the rule applies to. */
  match: RegExp;
  /** Only this HTTP method (default any). */
  method?: string;
  /** Applies this many times, then no more (default: always). */
  times?: number;
  act: HostileAct;
};

export type HostileStats = {
  /** Per rule (index in `rules`): times applied and body bytes sent by the proxy. */
  applied: number[];
  bytesSent: number[];
};

export type HostileProxy = {
  url: string;
  /** Set once the simulator runs: the proxy forwards here. */
  target: string;
  rules: HostileRule[];
  stats: HostileStats;
  /** Removes every rule and zeroes the counters. */
  clear(): void;
  close(): Promise<void>;
};

const CHUNK = Buffer.alloc(64 * 1024, 0x20);

export async function startHostileProxy(target = ""): Promise<HostileProxy> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const proxy: HostileProxy = {
    url: "",
    target,
    rules: [],
    stats: { applied: [], bytesSent: [] },
    clear() {
      proxy.rules.length = 0;
      proxy.stats.applied.length = 0;
      proxy.stats.bytesSent.length = 0;
    },
    close: async () => {
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const pick = (req: IncomingMessage): number => {
    const i = proxy.rules.findIndex(
      (r, n) => r.match.test(req.url ?? "") && (!r.method || r.method === req.method) && (r.times === undefined || (proxy.stats.applied[n] ?? 0) < r.times),
    );
    if (i >= 0) proxy.stats.applied[i] = (proxy.stats.applied[i] ?? 0) + 1;
    return i;
  };
  const sent = (i: number, n: number) => {
    proxy.stats.bytesSent[i] = (proxy.stats.bytesSent[i] ?? 0) + n;
  };

  const server = http.createServer((req, res) => {
    const i = pick(req);
    const rule = i >= 0 ? proxy.rules[i] : undefined;
    const act = rule?.act;
    if (act?.kind === "endless") return endless(res, act.contentType ?? "application/json", (n) => sent(i, n));
    if (act?.kind === "redirect") {
      res.writeHead(302, { location: act.location(req.url ?? "/"), "content-length": "0" });
      return res.end();
    }
    if (act?.kind === "answer") {
      res.writeHead(act.status, { "content-type": act.contentType ?? "application/json", "content-length": String(Buffer.byteLength(act.body)) });
      return res.end(act.body);
    }
    void forward(req).then(
      (up) => {
        let body = up.body;
        const headers = { ...up.headers };
        delete headers["transfer-encoding"];
        delete headers["content-encoding"];
        if (/json/.test(String(headers["content-type"] ?? ""))) {
          let text = body.toString("utf8").split(proxy.target).join(proxy.url);
          if (act?.kind === "rewrite") text = act.transform(text, req.url ?? "/");
          body = Buffer.from(text, "utf8");
        }
        headers["content-length"] = String(body.length);
        res.writeHead(up.status, headers);
        if (act?.kind === "truncate") {
          const part = body.subarray(0, act.bytes);
          sent(i, part.length);
          res.write(part, () => res.socket?.destroy());
          return;
        }
        if (act?.kind === "trickle") return trickle(res, body, act.bytesPerSecond, timers, (n) => sent(i, n));
        res.end(body);
      },
      (err: Error) => {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(`hostile proxy: upstream failed: ${err.message}`);
      },
    );
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });

  async function forward(req: IncomingMessage): Promise<{ status: number; headers: http.OutgoingHttpHeaders; body: Buffer }> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const upstream = new URL(req.url ?? "/", proxy.target);
    const headers = { ...req.headers, host: upstream.host, "accept-encoding": "identity" };
    return new Promise((resolve, reject) => {
      const out = http.request(upstream, { method: req.method, headers }, (res) => {
        const body: Buffer[] = [];
        res.on("data", (c: Buffer) => body.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(body) }));
        res.on("error", reject);
      });
      out.on("error", reject);
      out.end(Buffer.concat(chunks));
    });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

/** Writes spaces for as long as the client reads, honouring back-pressure; stops when it hangs up. */
function endless(res: ServerResponse, contentType: string, count: (n: number) => void): void {
  res.writeHead(200, { "content-type": contentType });
  let open = true;
  res.on("close", () => (open = false));
  const pump = () => {
    while (open) {
      count(CHUNK.length);
      if (!res.write(CHUNK)) {
        res.once("drain", pump);
        return;
      }
    }
  };
  pump();
}

/** Sends `body` a few bytes at a time, at about `bytesPerSecond`. */
function trickle(res: ServerResponse, body: Buffer, bytesPerSecond: number, timers: Set<NodeJS.Timeout>, count: (n: number) => void): void {
  const tickMs = 100;
  const per = Math.max(1, Math.round((bytesPerSecond * tickMs) / 1000));
  let at = 0;
  let owed = 0;
  const timer = setInterval(() => {
    owed += (bytesPerSecond * tickMs) / 1000;
    if (owed < 1 && per <= 1) return;
    const n = Math.max(1, Math.min(per, Math.floor(owed)));
    owed -= n;
    const part = body.subarray(at, at + n);
    at += part.length;
    count(part.length);
    res.write(part);
    if (at >= body.length) {
      clearInterval(timer);
      timers.delete(timer);
      res.end();
    }
  }, tickMs);
  timers.add(timer);
  res.on("close", () => {
    clearInterval(timer);
    timers.delete(timer);
  });
}
