// The `dvault` command line: the program of src/cli/program.ts, which imports only the command it runs.
import { exitQuietlyOnClosedPipe } from "./output/print.ts";
import { buildProgram, reportFailure } from "./program.ts";

async function main(): Promise<void> {
  exitQuietlyOnClosedPipe();
  try {
    const program = await buildProgram(process.argv.slice(2));
    await program.parseAsync(process.argv);
  } catch (err) {
    process.exitCode = reportFailure(err, /^(debug|trace)$/i.test(process.env.LOG_LEVEL ?? ""));
  }
}

await main();
