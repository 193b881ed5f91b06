// Progress events of work run now (`sync --once`, `download --once`, the demo): what the runners already know,
// told as it happens, so a terminal can draw it (src/cli/output/progress.ts) without reading the logs.
// A sink that throws breaks nothing the runner does: callers wrap it with `safeSink`.

/** One running unit: a source of an account, or one file's transfer. */
export type ProgressTask = { kind: "source"; id: string; label: string } | { kind: "transfer"; id: string; label: string };

export type ProgressEvent =
  /** A unit started. */
  | { type: "start"; task: ProgressTask }
  /** Where a source stands: items mirrored (new + changed + removed) and calls made so far. */
  | { type: "source"; id: string; items: number; calls: number }
  /** Bytes a transfer received since its last event. */
  | { type: "bytes"; id: string; bytes: number }
  /** A unit ended, with a word for how. */
  | { type: "end"; id: string; outcome: string }
  /** The whole run's count of files: `total` claimed so far, `finished` of them settled. */
  | { type: "files"; finished: number; total: number };

export type ProgressSink = (event: ProgressEvent) => void;

/** The sink, or nothing; a failing sink is ignored (drawing progress must never fail the work). */
export function safeSink(sink: ProgressSink | undefined): ProgressSink {
  if (!sink) return () => undefined;
  return (event) => {
    try {
      sink(event);
    } catch {
      // A terminal that went away: the work goes on.
    }
  };
}
