// `dvault simulator`: runs the built-in fake of the service until SIGINT/SIGTERM, for the demo and
// experiments. Its client secrets are fake, so printing them is fine.
import type { Command } from "commander";
import { InvalidArgumentError } from "commander";
import { UserError } from "../errors.ts";
import { DEFAULT_CLIENTS, startSimulator } from "../simulator/server.ts";
import { printOut } from "./output/print.ts";

function integer(name: string, min: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min) throw new InvalidArgumentError(`${name} expects an integer ≥ ${min}`);
    return Number(value);
  };
}

export function registerSimulatorCommand(program: Command): void {
  program
    .command("simulator")
    .description("run a local simulator of DeviantArt's OAuth2 API (for the demo, tests and experiments)")
    .option("--port <n>", "port to listen on (0 = any free port)", integer("--port", 0), 0)
    .option("--host <host>", "address to bind", "127.0.0.1")
    .option("--seed <n>", "dataset seed (same seed, same data)", integer("--seed", 0), 1)
    .option("--deviations <n>", "deviations in the account's gallery", integer("--deviations", 0))
    .option("--folders <n>", "gallery folders of the account", integer("--folders", 1))
    .option("--mode <mode>", "current (removed endpoints answer 404) or legacy", "current")
    .option("--token-lifetime <s>", "access-token lifetime in seconds", integer("--token-lifetime", 1), 3600)
    .option("--frozen-clock", "keep simulated time still unless advanced through /_sim/clock/advance")
    .action(
      async (opts: {
        port: number;
        host: string;
        seed: number;
        deviations?: number;
        folders?: number;
        mode: string;
        tokenLifetime: number;
        frozenClock?: boolean;
      }) => {
        // A UserError: commander's own errors thrown in an action are not printed (program.ts reportFailure).
        if (opts.mode !== "current" && opts.mode !== "legacy") throw new UserError(`--mode expects current or legacy, not ${JSON.stringify(opts.mode)}`);
        const sim = await startSimulator({
          port: opts.port,
          host: opts.host,
          seed: opts.seed,
          mode: opts.mode,
          accessTokenLifetimeS: opts.tokenLifetime,
          clockMode: opts.frozenClock ? "frozen" : "real",
          startTime: new Date(),
          dataset: {
            ...(opts.deviations !== undefined ? { deviations: opts.deviations } : {}),
            ...(opts.folders !== undefined ? { galleryFolders: opts.folders } : {}),
          },
        }).catch((err: NodeJS.ErrnoException) => {
          // A port in use or not this user's, an address this machine lacks: the person's to choose again.
          if (!["EADDRINUSE", "EACCES", "EADDRNOTAVAIL", "ENOTFOUND", "EAI_AGAIN"].includes(err.code ?? "")) throw err;
          throw new UserError(`cannot serve the simulator on ${opts.host}:${opts.port} (${err.code}): choose another --port (0 picks a free one) or --host`);
        });
        printOut(`simulator listening on ${sim.url}`);
        for (const c of DEFAULT_CLIENTS) {
          const kind = c.oauth21 ? "OAuth 2.1 public client (PKCE S256)" : "OAuth 2.0 confidential client";
          printOut(`  ${kind}: client_id=${c.clientId}${c.clientSecret ? ` client_secret=${c.clientSecret}` : ""} redirect_uris=${c.redirectUris.join(" ")}`);
        }
        printOut(`  DVAULT_API_BASE=${sim.url} DVAULT_CLIENT_ID=1001 DVAULT_CLIENT_SECRET=sim-secret-1001`);
        printOut(`  control API: ${sim.url}/_sim/truth, /_sim/log, /_sim/stats (Ctrl-C to stop)`);
        await new Promise<void>((resolve) => {
          const stop = () => resolve();
          process.once("SIGINT", stop);
          process.once("SIGTERM", stop);
        });
        await sim.close();
      },
    );
}
