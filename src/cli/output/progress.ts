// Live progress in a terminal: one line per running source or transfer and one for the files of a download run
// (done/total, bytes, rate, ETA), drawn by cli-progress on stderr from the runners' progress events
// (src/queue/progress.ts). A finished unit leaves one coloured line above the live ones. Outside a terminal
// (or with --quiet/--json) there is no view at all: the log lines, plain, tell what happened.
import cliProgress from "cli-progress";
import type { ProgressEvent, ProgressSink } from "../../queue/progress.ts";
import { formatBytes } from "../../text/bytes.ts";
import { colorsFor, showsLiveProgress } from "./mode.ts";
import type { Colors } from "./terminal.ts";
import { paintOutcome } from "./table.ts";
import { forTerminal } from "./terminal.ts";

export type ProgressView = { sink: ProgressSink | undefined; stop(): void };

type Line = {
  bar: cliProgress.SingleBar;
  kind: "source" | "transfer";
  label: string;
  started: number;
  items: number;
  calls: number;
  bytes: number;
};

const LABEL = 28;

/** The view for this command: live lines in a terminal, nothing elsewhere. */
export function progressView(options: { json?: boolean; now?: () => number } = {}): ProgressView {
  if (!showsLiveProgress(options.json)) return { sink: undefined, stop: () => undefined };
  return liveView(process.stderr, options.now ?? Date.now);
}

export function liveView(stream: NodeJS.WriteStream, now: () => number): ProgressView {
  const colors = colorsFor(stream);
  const multi = new cliProgress.MultiBar({
    stream,
    // Labels name sources and files: painted and escaped like every printed line (terminal.ts).
    format: (_options, _params, payload: { text?: string }) => forTerminal(payload.text ?? ""),
    hideCursor: true,
    clearOnComplete: true,
    linewrap: false,
    gracefulExit: true,
    // The runners tell often; a redraw a few times a second is enough for a person.
    fps: 5,
  });
  const lines = new Map<string, Line>();
  let files: { bar: cliProgress.SingleBar; started: number; finished: number; total: number } | undefined;
  let bytesTotal = 0;

  const draw = (line: Line) => line.bar.update(0, { text: describe(colors, line, now()) });
  const drawFiles = () => {
    if (!files) return;
    const elapsed = Math.max(1, now() - files.started);
    const rate = (bytesTotal / elapsed) * 1000;
    const left = files.total - files.finished;
    const eta = files.finished > 0 && left > 0 ? formatDuration((elapsed / files.finished) * left) : left > 0 ? "…" : "0s";
    const progress = files.total ? files.finished / files.total : 0;
    const bar = cliProgress.Format.BarFormat(progress, {
      barsize: 20,
      barCompleteString: "█".repeat(20),
      barIncompleteString: "░".repeat(20),
      barGlue: "",
    } as cliProgress.Options);
    files.bar.update(0, {
      text: `${colors.bold("files".padEnd(LABEL))} ${bar} ${files.finished}/${files.total}  ${formatBytes(bytesTotal)}  ${formatBytes(rate)}/s  ETA ${eta}`,
    });
  };

  const sink: ProgressSink = (event: ProgressEvent) => {
    switch (event.type) {
      case "start": {
        const line: Line = {
          bar: multi.create(1, 0, { text: "" }),
          kind: event.task.kind,
          label: event.task.label,
          started: now(),
          items: 0,
          calls: 0,
          bytes: 0,
        };
        lines.set(event.task.id, line);
        draw(line);
        break;
      }
      case "source": {
        const line = lines.get(event.id);
        if (!line) return;
        line.items = event.items;
        line.calls = event.calls;
        draw(line);
        break;
      }
      case "bytes": {
        bytesTotal += event.bytes;
        const line = lines.get(event.id);
        if (line) {
          line.bytes += event.bytes;
          draw(line);
        }
        drawFiles();
        break;
      }
      case "end": {
        const line = lines.get(event.id);
        if (!line) return;
        lines.delete(event.id);
        // Finished transfers are counted on the files line; finished sources each leave a line, written above the
        // live ones by the redraw that removing the bar makes.
        if (line.kind === "source") multi.log(`${forTerminal(`${paintOutcome(colors, event.outcome.padEnd(11))} ${describe(colors, line, now(), true)}`)}\n`);
        multi.remove(line.bar);
        break;
      }
      case "files": {
        files ??= { bar: multi.create(1, 0, { text: "" }), started: now(), finished: 0, total: 0 };
        files.finished = event.finished;
        files.total = event.total;
        drawFiles();
        break;
      }
    }
  };
  return {
    sink,
    stop: () => {
      multi.stop();
    },
  };
}

function describe(colors: Colors, line: Line, at: number, finished = false): string {
  const seconds = Math.max(0.001, (at - line.started) / 1000);
  const label = finished ? line.label : colors.cyan(line.label.padEnd(LABEL));
  if (line.kind === "transfer") return `${label} ${formatBytes(line.bytes).padStart(10)}  ${formatBytes(line.bytes / seconds)}/s`;
  const pages = `${line.calls} call${line.calls === 1 ? "" : "s"}`;
  const items = `${line.items} item${line.items === 1 ? "" : "s"}`;
  return `${label} ${items.padStart(11)}  ${pages.padStart(10)}  ${(line.items / seconds).toFixed(1)} items/s  ${formatDuration(at - line.started)}`;
}

/** 75 s → "1m15s", 3 s → "3s". */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}
