// The services a short database command opens (`dvault track`, `dvault feeds`): the config, the database,
// Redis, with warnings shown, closed however the command ends.
import { loadConfig } from "../config.ts";
import { createServices, type Services } from "../services.ts";
import { cliLogger } from "./output/mode.ts";

export async function withServices<T>(fn: (services: Services) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const services = await createServices({ config, log: cliLogger(config) });
  try {
    return await fn(services);
  } finally {
    await services.close();
  }
}
