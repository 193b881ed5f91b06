// The failed-jobs page (retry, retry all, pause, resume) and the one-message page.
import type { StatusReport } from "../../status/schema.ts";
import type { FailedJob } from "../../queue/queue-admin.ts";
import { formatRelative } from "../../status/units.ts";
import { html } from "../../text/html.ts";
import { layout, pill } from "./layout.ts";

/** Failed jobs listed at most, the newest first; the page says when more have failed. */
export const FAILED_JOBS_SHOWN = 200;

/** The failed-jobs page; `failed` may hold one more than FAILED_JOBS_SHOWN, which says that more failed. */
export function jobsPage({
  failed,
  queues,
  csrf,
  notice,
  queue,
}: {
  failed: FailedJob[];
  queues: StatusReport["queues"];
  csrf: string;
  notice?: string | undefined;
  queue?: string | undefined;
}): string {
  const now = Date.now();
  const hidden = html`<input type="hidden" name="_csrf" value="${csrf}">`;
  const failedCount = queues.filter((q) => !queue || q.name === queue).reduce((sum, q) => sum + q.failed, 0);
  const body = html`
<h1>Failed jobs</h1>
${notice ? html`<div class="notice">${notice}</div>` : ""}
<div class="card"><h2>Queues</h2><table class="cards"><thead><tr><th>queue</th><th class="num">waiting</th><th class="num">active</th><th class="num">delayed</th><th class="num">failed</th><th></th></tr></thead>
${queues.map(
  (
    q,
  ) => html`<tr><td data-label="queue"><a href="/jobs?queue=${q.name}">${q.name}</a> ${q.paused ? pill("paused", "warn") : ""}</td><td class="num" data-label="waiting">${q.waiting}</td><td class="num" data-label="active">${q.active}</td><td class="num" data-label="delayed">${q.delayed}</td><td class="num" data-label="failed">${q.failed}</td>
<td><form class="inline" method="post" action="/jobs/${q.paused ? "resume" : "pause"}">${hidden}<input type="hidden" name="queue" value="${q.name}"><button class="ghost" type="submit">${q.paused ? "Resume" : "Pause"}</button></form>
${q.failed ? html` <form class="inline" method="post" action="/jobs/retry-all">${hidden}<input type="hidden" name="queue" value="${q.name}"><button class="ghost" type="submit">Retry all ${q.failed}</button></form>` : ""}</td></tr>`,
)}</table></div>
<div class="card"><h2>${queue ? `Failed in ${queue}` : "Failed"} (${failed.length > FAILED_JOBS_SHOWN ? `${Math.max(failedCount, failed.length).toLocaleString("en")}` : failed.length})</h2>
${failed.length === 0 ? html`<p class="muted">Nothing failed. 🎉</p>` : ""}${
  failed.length > FAILED_JOBS_SHOWN
    ? html`<p class="small muted">The newest ${FAILED_JOBS_SHOWN} are listed; a queue's Retry all retries every failed job of it.</p>`
    : ""
}
<table class="cards">${failed.length ? html`<thead><tr><th>job</th><th>payload</th><th>reason</th><th>attempts</th><th>failed</th><th></th></tr></thead>` : ""}
${failed.slice(0, FAILED_JOBS_SHOWN).map(
  (j) => html`<tr><td data-label="job"><b>${j.name}</b><div class="small muted">${j.queue}/${j.id}</div></td>
<td class="small" data-label="payload">${Object.entries(j.data).map(([k, v]) => html`<div>${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}</div>`)}</td>
<td class="small reason" data-label="reason">${j.reason || "(no reason recorded)"}</td>
<td class="num" data-label="attempts">${j.attemptsMade}/${j.attempts}</td>
<td class="small" data-label="failed">${formatRelative(j.failedAt, now)}<div class="muted">created ${formatRelative(j.createdAt, now)}</div></td>
<td><form method="post" action="/jobs/retry">${hidden}<input type="hidden" name="queue" value="${j.queue}"><input type="hidden" name="id" value="${j.id}"><button type="submit">Retry</button></form></td></tr>`,
)}</table></div>`;
  return layout({ title: "Failed jobs", nav: "jobs", body });
}

export function messagePage(status: number, heading: string, text: string): string {
  return layout({ title: heading, body: html`<div class="card"><h1>${heading}</h1><p>${text}</p><p class="muted small">HTTP ${status}</p></div>` });
}
