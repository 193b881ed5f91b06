// `dvault archive --once`'s exit code is the worse of its two steps' (src/cli/archive.ts ARCHIVE_EXIT_ORDER): the
// order each command uses alone, so a script reading it learns what it would from `sync --once && download --once`.
import { describe, expect, it } from "vitest";
import { archiveVerdict, notRunJson, stoppedBeforeDownload } from "../../src/cli/archive.ts";
import { EXIT_FAILED, EXIT_INTERRUPTED, EXIT_NEEDS_LOGIN, EXIT_PAUSED, UserError } from "../../src/errors.ts";

const e = (code: number) => new UserError(`code ${code}`, code);

describe("archiveVerdict", () => {
  it("keeps one step's error as it is, and none when neither step has one", () => {
    const sync = e(EXIT_FAILED);
    expect(archiveVerdict(sync, undefined)).toBe(sync);
    const download = e(EXIT_PAUSED);
    expect(archiveVerdict(undefined, download)).toBe(download);
    expect(archiveVerdict(undefined, undefined)).toBeUndefined();
  });

  it.each([
    [EXIT_FAILED, EXIT_PAUSED, EXIT_PAUSED],
    [EXIT_NEEDS_LOGIN, EXIT_PAUSED, EXIT_PAUSED],
    [EXIT_NEEDS_LOGIN, EXIT_FAILED, EXIT_NEEDS_LOGIN],
    [EXIT_INTERRUPTED, EXIT_FAILED, EXIT_INTERRUPTED],
    [EXIT_FAILED, EXIT_INTERRUPTED, EXIT_INTERRUPTED],
    [EXIT_FAILED, EXIT_FAILED, EXIT_FAILED],
  ])("sync %i and download %i exit %i, saying both", (sync, download, code) => {
    const verdict = archiveVerdict(e(sync), e(download));
    expect(verdict?.exitCode).toBe(code);
    expect(verdict?.message).toBe(`sync: code ${sync}; download: code ${download}`);
  });

  it("a stop that skipped the download step exits 130 even when every source of the sync finished", () => {
    // A Ctrl-C after the last source's last wait leaves every sync row "ok": the skipped download alone must say it.
    const verdict = archiveVerdict(undefined, stoppedBeforeDownload());
    expect(verdict?.exitCode).toBe(EXIT_INTERRUPTED);
    expect(verdict?.message).toBe("stopped during the sync: no download was started; run dvault archive --once again");
    expect(archiveVerdict(e(EXIT_FAILED), stoppedBeforeDownload())?.exitCode).toBe(EXIT_INTERRUPTED);
  });
});

describe("notRunJson", () => {
  it("says why with the line stderr prints, scrubbed of secrets as that line is (src/cli/program.ts reportFailure)", () => {
    // An error nobody expected can quote a URL with its password, or a token in a query string.
    const error = new UserError(
      "the download step stopped on an unexpected error: connect to postgresql://dvault:hunter2secret@db/dvault?access_token=tok123456789 failed",
      EXIT_FAILED,
    );
    const printed = notRunJson(undefined, false, { error, failed: true });
    expect(printed?.why).toBe("failed");
    expect(printed?.message).not.toContain("hunter2secret");
    expect(printed?.message).not.toContain("tok123456789");
    expect(printed?.message).toContain("postgresql://dvault:***@db/dvault");
  });

  it("tells a step stopped during the sync from one refused before it started, and is null beside a summary", () => {
    expect(notRunJson(undefined, true, { error: stoppedBeforeDownload() })).toEqual({ why: "stopped", message: stoppedBeforeDownload().message });
    const login = new UserError("every account must log in again: run dvault auth login", EXIT_NEEDS_LOGIN);
    expect(notRunJson(undefined, false, { error: login })).toEqual({ why: "refused", message: login.message });
    expect(notRunJson({} as Parameters<typeof notRunJson>[0], false, { error: undefined })).toBeNull();
  });
});
