// Whether a PostgreSQL server answers at a URL (whatever database it names): what `dvault init` asks before it
// chooses the embedded server. A server that answers but refuses the login still answers: init keeps it, and the
// first command says what to fix.
import { ServiceUnavailableError } from "../errors.ts";
import { connectPg } from "./connect.ts";
import { withDatabase } from "./pg-fields.ts";

export async function postgresAnswers(url: string, timeoutMs = 2000): Promise<boolean> {
  try {
    const client = await connectPg(withDatabase(url, "postgres"), timeoutMs);
    await client.end().catch(() => undefined);
    return true;
  } catch (err) {
    return !(err instanceof ServiceUnavailableError);
  }
}
