// Where the test services are. Tests build configs from these, never from the developer's own setup.
export const TEST_PG_URL = process.env.DVAULT_TEST_DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";
export const TEST_REDIS_URL = process.env.DVAULT_TEST_REDIS_URL || "redis://127.0.0.1:6379";
/** The engine the queues of a test's services run on (src/queue/backend.ts): DVAULT_TEST_ENGINE=postgres, else Redis. */
export const TEST_ENGINE = process.env.DVAULT_TEST_ENGINE === "postgres" ? "postgres" : "redis";
export const TEMPLATE_DB_PREFIX = "dvault_test_template_";
