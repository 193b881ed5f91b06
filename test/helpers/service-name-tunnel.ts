// Lets a program that only ever calls https://www.deviantart.com reach the simulator, without touching
// /etc/hosts: a throwaway CA and a certificate for www.deviantart.com made with openssl, the simulator's TLS
// listener holding it, and a CONNECT proxy on loopback that tunnels www.deviantart.com:443 (and nothing else)
// to that listener. The program is given `--proxy http://127.0.0.1:<port>` and the CA to verify with.
import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import { createServer, type Server } from "node:http";
import net from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import type { Simulator } from "../../src/simulator/server.ts";

const run = promisify(execFile);

export const SERVICE_HOST = "www.deviantart.com";

export type ServiceNameTunnel = {
  /** `--proxy` for the program. */
  proxyUrl: string;
  /** The CA certificate (PEM file) the program verifies the simulator's certificate with. */
  caFile: string;
  /** Every CONNECT target asked for, refused ones included. */
  connects: string[];
  close(): Promise<void>;
};

/** A CA and a leaf certificate for www.deviantart.com in `dir` (openssl, two days). */
export async function makeServiceCertificate(dir: string): Promise<{ caFile: string; key: Buffer; cert: Buffer }> {
  const p = (name: string) => path.join(dir, name);
  await fs.writeFile(
    p("leaf.ext"),
    `${[`subjectAltName=DNS:${SERVICE_HOST}`, "basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment", "extendedKeyUsage=serverAuth", "authorityKeyIdentifier=keyid"].join("\n")}\n`,
  );
  const ossl = (args: string[]) => run("openssl", args, { cwd: dir });
  await ossl([
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    p("ca.key"),
    "-out",
    p("ca.pem"),
    "-days",
    "2",
    "-subj",
    "/CN=dvault test CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
    "-addext",
    "subjectKeyIdentifier=hash",
  ]);
  await ossl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", p("leaf.key"), "-out", p("leaf.csr"), "-subj", `/CN=${SERVICE_HOST}`]);
  await ossl([
    "x509",
    "-req",
    "-in",
    p("leaf.csr"),
    "-CA",
    p("ca.pem"),
    "-CAkey",
    p("ca.key"),
    "-CAcreateserial",
    "-out",
    p("leaf.pem"),
    "-days",
    "2",
    "-extfile",
    p("leaf.ext"),
  ]);
  return { caFile: p("ca.pem"), key: await fs.readFile(p("leaf.key")), cert: await fs.readFile(p("leaf.pem")) };
}

export type ServiceCertificate = Awaited<ReturnType<typeof makeServiceCertificate>>;

/**
 * Starts the simulator's TLS listener with a www.deviantart.com certificate and a CONNECT proxy to it. A caller
 * that starts many simulators (bench/versus.ts) makes the certificate once and passes it in.
 */
export async function startServiceNameTunnel(sim: Simulator, dir: string, made?: ServiceCertificate): Promise<ServiceNameTunnel> {
  const { caFile, key, cert } = made ?? (await makeServiceCertificate(dir));
  const { port: tlsPort } = await sim.listenTls({ key, cert });
  const connects: string[] = [];
  const sockets = new Set<net.Socket>();
  const proxy: Server = createServer((_req, res) => {
    res.writeHead(403, { "content-type": "text/plain" }).end("only CONNECT to www.deviantart.com:443\n");
  });
  proxy.on("connect", (req, client: net.Socket, head: Buffer) => {
    const target = req.url ?? "";
    connects.push(target);
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    if (target !== `${SERVICE_HOST}:443`) {
      client.end("HTTP/1.1 403 Forbidden\r\n\r\n");
      return;
    }
    const upstream = net.connect(tlsPort, "127.0.0.1", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on("close", () => sockets.delete(upstream));
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const { port } = proxy.address() as net.AddressInfo;
  return {
    proxyUrl: `http://127.0.0.1:${port}`,
    caFile,
    connects,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        proxy.close(() => resolve());
      }),
  };
}

/**
 * gallery-dl's options for reaching the simulator through the tunnel with its own grant: no user config, the
 * proxy and CA, a private cache file, the simulator's client and a refresh token, the user's own view
 * (`public=false`).
 */
export function galleryDlOptions(o: {
  proxyUrl: string;
  caFile: string;
  cacheFile: string;
  clientId: string;
  clientSecret: string;
  refreshToken: string;
}): string[] {
  const set = (option: string) => ["-o", option];
  return [
    "--config-ignore",
    "--proxy",
    o.proxyUrl,
    ...set(`verify=${o.caFile}`),
    ...set(`cache.file=${o.cacheFile}`),
    ...set(`extractor.deviantart.client-id="${o.clientId}"`),
    ...set(`extractor.deviantart.client-secret=${o.clientSecret}`),
    ...set(`extractor.deviantart.refresh-token=${o.refreshToken}`),
    ...set("extractor.deviantart.public=false"),
  ];
}
