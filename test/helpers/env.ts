// Where the test services are. Tests build configs from these, never from the developer's own setup. At the
// defaults, the global setup may replace a server that does not answer (test/helpers/test-servers.ts), in the
// environment the test workers start with.
import { pgFields } from "../../src/db/pg-fields.ts";

export const DEFAULT_TEST_PG_URL = "postgresql://postgres@127.0.0.1:5432/postgres";
export const DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379";
export const TEST_PG_URL = process.env.DVAULT_TEST_DATABASE_URL || DEFAULT_TEST_PG_URL;
export const TEST_REDIS_URL = process.env.DVAULT_TEST_REDIS_URL || DEFAULT_TEST_REDIS_URL;
/** The test server's host:port as dvault's one-line refusals name it (an embedded server of the run has a port of its own). */
export const TEST_PG_ADDRESS = `${pgFields(TEST_PG_URL).host}:${pgFields(TEST_PG_URL).port}`;
export const TEMPLATE_DB_PREFIX = "dvault_test_template_";
/**
 * The engine the tests' dvault runs on (DVAULT_ENGINE): redis unless DVAULT_TEST_ENGINE=postgres, which .ci/run sets
 * for its second pass (the compliance suite and the end-to-end flows on PostgreSQL alone).
 */
export const TEST_ENGINE: "redis" | "postgres" = process.env.DVAULT_TEST_ENGINE === "postgres" ? "postgres" : "redis";
