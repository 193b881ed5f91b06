// `dvault account set <name> --download-quota N`: per-account settings (paid tiers download 150 or 300
// originals a week instead of the free 10).
import type { Command } from "commander";
import { loadConfig } from "../config.ts";
import { DownloadQuotaRepository } from "../db/download-quota.repository.ts";
import { DownloadQuota } from "../downloads/quota.ts";
import { UserError } from "../errors.ts";
import { cliLogger } from "./output/mode.ts";
import { createServices, type Services } from "../services.ts";
import { printOut } from "./output/print.ts";

/** Sets (a number) or clears ("default") an account's weekly allowance; returns the line to print. */
export async function setDownloadQuota(services: Services, name: string, value: string): Promise<string> {
  const allowance = value === "default" ? null : Number(value);
  if (allowance !== null && !(Number.isInteger(allowance) && allowance >= 0 && allowance <= 100_000)) {
    throw new UserError(`--download-quota expects a whole number of originals per week (10 free, 150 or 300 for paid tiers) or "default", not "${value}"`);
  }
  const repo = new DownloadQuotaRepository(services.pool);
  if (!(await repo.setAccountAllowance(name, allowance, new Date(services.now())))) {
    throw new UserError(`no account named "${name}": see dvault auth status`);
  }
  const account = await services.accounts.findByName(name);
  const quota = new DownloadQuota({ repo, defaultAllowance: services.config.downloadQuota, now: services.now });
  const st = await quota.state(account?.id ?? 0);
  const what = allowance === null ? `the default (DVAULT_DOWNLOAD_QUOTA=${services.config.downloadQuota})` : String(allowance);
  return `${name}: weekly download allowance set to ${what}; this week ${st.used} used, ${st.remaining} left, next window ${st.nextWindow.toISOString()}`;
}

export function registerAccountCommand(program: Command): void {
  const account = program.command("account").description("per-account settings");
  account
    .command("set <name>")
    .description("change an account's settings")
    .option("--download-quota <n>", 'original downloads per week for this account (paid tiers: 150 or 300), or "default"')
    .action(async (name: string, opts: { downloadQuota?: string }) => {
      if (opts.downloadQuota === undefined) throw new UserError("nothing to set: give --download-quota <n>");
      const config = loadConfig();
      const services = await createServices({ config, log: cliLogger(config) });
      try {
        printOut(await setDownloadQuota(services, name, opts.downloadQuota));
      } finally {
        await services.close();
      }
    });
}
