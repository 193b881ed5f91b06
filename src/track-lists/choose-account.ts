// Which user account a person's request works as: the one they named, else the only one. The CLI says it with
// --account (src/cli/pick-account.ts), the dashboard with its boxes' account list (src/http/routes/url-boxes.ts).
import type { AccountRow } from "../db/account.repository.ts";

export type AccountChoice = { row: AccountRow } | { unknown: string } | { none: true } | { several: string[] };

export function chooseUserAccount(accounts: readonly AccountRow[], name: string | undefined): AccountChoice {
  const users = accounts.filter((r) => r.kind === "user");
  const row = name ? users.find((r) => r.name === name) : users.length === 1 ? users[0] : undefined;
  if (row) return { row };
  if (name) return { unknown: name };
  if (users.length === 0) return { none: true };
  return { several: users.map((u) => u.name) };
}
