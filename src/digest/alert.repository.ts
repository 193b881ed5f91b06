// Moved to src/db/alert.repository.ts (all SQL lives in src/db); this path keeps older imports compiling.
export * from "../db/alert.repository.ts";
