// `dvault config`: the settings in effect and where each came from (a default, the settings file, the
// environment, a flag), secrets masked; `--template` prints the commented settings file (.env.example is it).
import type { Command } from "commander";
import { loadConfig } from "../config.ts";
import { effectiveSettings, renderHelpList, renderTemplate } from "../config/catalogue.ts";
import { appliedSettings } from "../config/settings-file.ts";
import { ntfyEndpoint } from "../digest/deliver/ntfy.ts";
import { maskUrl } from "../redact.ts";
import { formatTable } from "./output/table.ts";
import { colorsFor } from "./output/mode.ts";
import { printDocument, printJson, printOut } from "./output/print.ts";

export function registerConfigCommand(program: Command): void {
  program
    .command("config")
    .description("print the effective settings and where each came from (secrets masked); --template prints a settings file")
    .option("--json", "one JSON document: each setting's name, value, where it came from, and whether it is a secret")
    .option("--template", "print the settings file's commented template (every setting at its default) instead")
    .addHelpText("after", () => `\nSettings (environment variables, or NAME=value lines of the settings file):\n${renderHelpList()}`)
    .action((opts: { json?: boolean; template?: boolean }) => {
      if (opts.template) {
        printDocument(renderTemplate());
        return;
      }
      const layers = appliedSettings();
      const settings = effectiveSettings(layers, maskUrl).map(maskAddressSecret);
      if (opts.json) printJson({ file: layers.file ?? null, settings });
      else {
        printOut(`settings file: ${layers.file ?? "none (no ./.env; --config <file> or DVAULT_CONFIG names one)"}`);
        printOut(
          formatTable(
            ["setting", "value", "from"],
            settings.map((s) => [s.name, s.value ?? "—", s.from]),
            { colors: colorsFor() },
          ),
        );
      }
      // Shown first, refused after: a person sees every value, then the one line about what is wrong.
      loadConfig();
    });
}

/**
 * An ntfy topic on a public server is its only password (README, "ntfy"), and so is a webhook's path (Zapier's
 * /hooks/catch/<id>/<key>, n8n's and Home Assistant's webhook ids): shown as their server and ***, like a secret.
 */
function maskAddressSecret<S extends { name: string; value?: string | null }>(s: S): S {
  const value = s.value?.trim();
  if (!value || !URL.canParse(value)) return s;
  if (s.name === "DVAULT_NTFY_URL") return { ...s, value: `${ntfyEndpoint(value).server}***` };
  if (s.name === "DVAULT_WEBHOOK_URL") return { ...s, value: `${new URL(value).origin}/***` };
  return s;
}
