// The pino root logger: JSON when not a TTY, pretty in a TTY, and every secret scrubbed on the way out.
import { createRequire } from "node:module";
import { Writable } from "node:stream";
import { pino, type Logger, type DestinationStream } from "pino";
import type { PrettyOptions, PrettyStream } from "pino-pretty";
import type { LogLevel } from "./config.ts";
import { scrubString, scrubValue, serializeError } from "./redact.ts";
import { terminalLogText } from "./text/controls.ts";

export type { Logger };

/** Static redaction paths: the fast path for the common places; scrubValue below catches the rest. */
const REDACT_PATHS = [
  "req.headers.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "*.headers.cookie",
  "access_token",
  "refresh_token",
  "client_secret",
  "code_verifier",
  "*.access_token",
  "*.refresh_token",
  "*.client_secret",
  "*.code_verifier",
  "*.password",
];

export type LoggerOptions = {
  level?: LogLevel;
  /** Where lines go; defaults to stderr, pretty when stderr is a TTY. */
  destination?: DestinationStream;
  pretty?: boolean;
  base?: Record<string, unknown>;
};

export function createLogger(options: LoggerOptions = {}): Logger {
  const usePretty = options.pretty ?? (options.destination === undefined && process.stderr.isTTY === true);
  const destination = options.destination ?? (usePretty ? prettyStream() : pino.destination({ dest: 2, sync: true }));
  return pino(
    {
      level: options.level ?? "info",
      base: options.base ?? { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      serializers: { err: (err: unknown) => (err instanceof Error ? serializeError(err) : scrubValue(err)) },
      formatters: {
        log: (object) => scrubValue(object) as Record<string, unknown>,
      },
      hooks: {
        // Message strings are not seen by formatters.log; scrub them here.
        logMethod(args, method) {
          const safe = args.map((arg) => (typeof arg === "string" ? scrubString(arg) : arg)) as typeof args;
          method.apply(this, safe);
        },
      },
    },
    destination,
  );
}

/**
 * pino-pretty is loaded only for a terminal: piped and logged runs (and `dvault status`) start without it. Its lines
 * quote messages and errors that may carry the service's text: their control characters are escaped on the way to
 * the terminal, as the CLI's printer does (src/text/controls.ts), its colours kept.
 */
function prettyStream(): PrettyStream {
  const pretty = createRequire(import.meta.url)("pino-pretty") as (options: PrettyOptions) => PrettyStream;
  const stderr = pino.destination({ dest: 2, sync: true });
  const escaped = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      stderr.write(terminalLogText(String(chunk)));
      done();
    },
  });
  return pretty({ colorize: true, destination: escaped, sync: true });
}
