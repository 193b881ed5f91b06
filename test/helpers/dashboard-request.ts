// One HTTP request on its own connection (no keep-alive pool between a burst and the server), with the Host
// and method of our choosing (fetch cannot set Host): the dashboard's load and refusal cases.
import http from "node:http";

export type RawAnswer = { status: number; headers: http.IncomingHttpHeaders; text: string; ms: number };

export function rawRequest(
  url: string,
  { method = "GET", headers = {}, body, signal }: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal } = {},
): Promise<RawAnswer> {
  const started = performance.now();
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, method, agent: false, headers, ...(signal ? { signal } : {}) },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, ms: performance.now() - started }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
