// The lock moved to src/redis-lock.ts (a foundation module the API client may use too); this path keeps working.
export * from "../redis-lock.ts";
