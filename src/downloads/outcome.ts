// What one file's download is asked (DownloadRequest) and what became of it (DownloadOutcome): the words
// download-file.ts, the text and rendition paths it hands a file to (store-text.ts, after-store.ts) and the
// callers that count outcomes (file-job.ts, run-once.ts) share, so none of them imports another for a type.
import type { DownloadKind } from "../db/download.repository.ts";
import type { Logger } from "../log.ts";

export type DownloadOutcome =
  | { status: "done"; rendition: string; size: number; bytes: number; upgraded: boolean; deduplicated: boolean; partial: boolean }
  | { status: "degraded"; rendition: string; reason: string; nextWindow: Date; bytes: number; partial: boolean }
  | { status: "deferred"; reason: string; nextWindow: Date; bytes: number }
  | { status: "not_downloadable"; reason: string; rendition: string | null; bytes: number; partial: boolean }
  | { status: "skipped"; reason: string }
  | { status: "busy"; reason: string };

export type DownloadRequest = {
  deviationid: string;
  kind: Exclude<DownloadKind, "degraded">;
  log: Logger;
  signal?: AbortSignal | undefined;
  onBytes?: ((n: number) => void) | undefined;
  /**
   * This file's turn at the weekly allowance: reservations are made in the order files were claimed
   * (priority order), whatever order concurrent transfers reach them in. `pass` hands the turn on.
   */
  reservationTurn?: ReservationTurn | undefined;
};

export type ReservationTurn = { wait(): Promise<void>; pass(): void };
