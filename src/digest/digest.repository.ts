// Moved to src/db/digest.repository.ts (all SQL lives in src/db); this path keeps older imports compiling.
export * from "../db/digest.repository.ts";
