// The user account a command works as: `--account <name>`, else the only one; one line when that does not decide.
import type { AccountRow } from "../db/account.repository.ts";
import { noUserAccountNamed, UserError } from "../errors.ts";
import type { Services } from "../services.ts";
import { chooseUserAccount } from "../track-lists/choose-account.ts";

export async function pickUserAccount(services: Services, name: string | undefined): Promise<AccountRow> {
  const accounts = await services.accounts.list();
  const choice = chooseUserAccount(accounts, name);
  if ("row" in choice) return choice.row;
  if ("unknown" in choice) throw noUserAccountNamed(choice.unknown, accounts);
  if ("none" in choice) throw new UserError("no accounts yet: log in first with dvault auth login");
  throw new UserError(`several accounts exist (${choice.several.join(", ")}): choose one with --account <name>`);
}
