// `npm run check:code`: the checks that read parsed code (layer imports, function size, SQL only in src/db, rows typed from the schema, jobs
// only through the producer) in one process, over one parse of each file (scripts/checks/parse.ts), each printing
// what it prints alone (`npm run check:imports` and the others); exit 1 when any fails.
import { sizeCheck } from "./function-size.ts";
import { importsCheck } from "./imports.ts";
import { jobsCheck } from "./jobs-through-producer.ts";
import { parseTree, runChecks } from "./parse.ts";
import { checkRoot } from "./source-files.ts";
import { rowTypesCheck } from "./row-types.ts";
import { sqlCheck } from "./sql-in-db.ts";

const root = checkRoot();
if (!runChecks([importsCheck, sizeCheck, sqlCheck, rowTypesCheck, jobsCheck], root, parseTree(root))) process.exit(1);
