// The last step of `dvault engine migrate` (src/engine/move.ts): DVAULT_ENGINE switched where the install reads it.
// Written into the settings file in use, whoever sets it now. When the environment sets it, the environment wins over
// the file (src/config/settings-file.ts) and the line also says which variable to change; the file is written all the
// same: a variable set for one command (the move back a refused process prints, `DVAULT_ENGINE=<engine> dvault engine
// migrate --to ...`, src/queue/holder.ts) is gone after it, and the file left naming the engine the install left had
// every process that reads it refused there.
import type { Engine } from "../config.ts";
import { type SettingsLayers, writeSettingToFile } from "../config/settings-file.ts";

export type EngineSwitch = { written: string | undefined; line: string };

export function switchEngineSetting(layers: SettingsLayers, to: Engine): EngineSwitch {
  // An empty variable counts as unset (src/config/settings-file.ts): the file's line would win over it.
  const fromEnvironment = layers.origins.get("DVAULT_ENGINE")?.from === "environment" && (layers.env.DVAULT_ENGINE ?? "") !== "";
  const inEnvironment = `DVAULT_ENGINE is set in the environment: change it to DVAULT_ENGINE=${to} there before dvault runs again`;
  if (fromEnvironment && !layers.file) return { written: undefined, line: inEnvironment };
  if (!layers.file) {
    return { written: undefined, line: `no settings file is in use: set DVAULT_ENGINE=${to} in the environment (or in ./.env) before dvault runs again` };
  }
  writeSettingToFile(layers.file, "DVAULT_ENGINE", to);
  const wrote = `wrote DVAULT_ENGINE=${to} to ${layers.file}`;
  return { written: layers.file, line: fromEnvironment ? `${wrote}; ${inEnvironment}` : wrote };
}
