// The user account a command works as: `--account <name>`, else the only one; one line when that does not decide.
import type { AccountRow } from "../db/account.repository.ts";
import { UserError } from "../errors.ts";
import type { Services } from "../services.ts";

export async function pickUserAccount(services: Services, name: string | undefined): Promise<AccountRow> {
  const users = (await services.accounts.list()).filter((r) => r.kind === "user");
  const row = name ? users.find((r) => r.name === name) : users.length === 1 ? users[0] : undefined;
  if (row) return row;
  if (name) throw new UserError(`no account named "${name}": see dvault auth status`);
  if (users.length === 0) throw new UserError("no accounts yet: log in first with dvault auth login");
  throw new UserError(`several accounts exist (${users.map((u) => u.name).join(", ")}): choose one with --account <name>`);
}
