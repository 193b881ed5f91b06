// The last step of `dvault engine migrate` (src/engine/move.ts): DVAULT_ENGINE switched where the install reads it.
// Written into the settings file in use when the setting comes from it (or from nowhere: its default); when the
// environment sets it, the environment wins over any file (src/config/settings-file.ts), so writing the file would
// change nothing: the line says which variable to change instead.
import type { Engine } from "../config.ts";
import { type SettingsLayers, writeSettingToFile } from "../config/settings-file.ts";

export type EngineSwitch = { written: string | undefined; line: string };

export function switchEngineSetting(layers: SettingsLayers, to: Engine): EngineSwitch {
  // An empty variable counts as unset (src/config/settings-file.ts): the file's line would win over it.
  const fromEnvironment = layers.origins.get("DVAULT_ENGINE")?.from === "environment" && (layers.env.DVAULT_ENGINE ?? "") !== "";
  if (fromEnvironment) {
    return { written: undefined, line: `DVAULT_ENGINE is set in the environment: change it to DVAULT_ENGINE=${to} there before dvault runs again` };
  }
  if (!layers.file) {
    return { written: undefined, line: `no settings file is in use: set DVAULT_ENGINE=${to} in the environment (or in ./.env) before dvault runs again` };
  }
  writeSettingToFile(layers.file, "DVAULT_ENGINE", to);
  return { written: layers.file, line: `wrote DVAULT_ENGINE=${to} to ${layers.file}` };
}
