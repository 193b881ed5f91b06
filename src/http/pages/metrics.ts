// The metrics page: what the Prometheus registry (src/metrics.ts) says at this moment, as figures, bar charts
// (inline SVG drawn on the server) and a table of the queues, with the raw text a link away. Every number is a
// value of the registry (registry.getMetricsAsJSON), written in a <data> element with the series it comes
// from, as the text exposition names it: nothing here is counted again.
import { formatDuration, formatRate } from "../../status/units.ts";
import { formatBytes } from "../../text/bytes.ts";
import { html, type SafeHtml } from "../../text/html.ts";
import { group, layout, pill } from "./layout.ts";

/** One metric family as prom-client's getMetricsAsJSON gives it. */
export type MetricFamily = {
  name: string;
  help: string;
  values: ReadonlyArray<{ value: number; labels: Readonly<Record<string, string | number | undefined>> }>;
};
type Sample = MetricFamily["values"][number];
type Unit = "count" | "bytes" | "seconds" | "rate";

/** Where raw Prometheus text is, for a browser: /metrics answers it to a scraper without asking. */
export const RAW_METRICS_HREF = "/metrics?format=text";

/** Single numbers, shown first. */
const FIGURES: ReadonlyArray<{ name: string; label: string; unit?: Unit }> = [
  { name: "dvault_archive_files", label: "files archived" },
  { name: "dvault_archive_size_bytes", label: "archive size", unit: "bytes" },
  { name: "dvault_archive_free_bytes", label: "free disk", unit: "bytes" },
  { name: "dvault_downloaded_bytes", label: "originals downloaded", unit: "bytes" },
  { name: "dvault_workers", label: "workers alive" },
  { name: "dvault_api_paced_total", label: "API calls paced" },
  { name: "dvault_api_throttled_total", label: "API calls throttled" },
  { name: "dvault_api_retries_total", label: "API calls retried" },
  { name: "dvault_api_token_refreshes_total", label: "token refreshes" },
  { name: "dvault_scrape_problems", label: "status parts unreadable" },
];

/** Families with labels, one bar per series, largest first. */
const CHARTS: ReadonlyArray<{ name: string; title: string; unit?: Unit }> = [
  { name: "dvault_downloads", title: "Downloads by status" },
  { name: "dvault_api_calls_total", title: "API calls by operation and answer" },
  { name: "dvault_jobs_completed_total", title: "Jobs completed" },
  { name: "dvault_jobs_failed_total", title: "Jobs failed for good" },
  { name: "dvault_download_quota_used", title: "Original downloads used this week" },
  { name: "dvault_download_quota_remaining", title: "Original downloads left this week" },
  { name: "dvault_pacer_rate", title: "API pace now", unit: "rate" },
  { name: "dvault_pacer_throttled_seconds", title: "Time lost to throttling", unit: "seconds" },
  { name: "dvault_http_answers_total", title: "Dashboard answers" },
];

/** This process, from prom-client's default metrics. */
const PROCESS: ReadonlyArray<{ name: string; label: string; unit: Unit }> = [
  { name: "dvault_process_resident_memory_bytes", label: "memory", unit: "bytes" },
  { name: "dvault_nodejs_heap_size_used_bytes", label: "heap used", unit: "bytes" },
  { name: "dvault_process_cpu_seconds_total", label: "CPU time", unit: "seconds" },
  { name: "dvault_nodejs_eventloop_lag_p99_seconds", label: "event loop lag (p99)", unit: "seconds" },
];

const QUEUE_STATES = ["waiting", "active", "delayed", "failed", "completed"] as const;
const MAX_BARS = 15;

function formatValue(value: number, unit: Unit = "count"): string {
  if (unit === "bytes") return formatBytes(value);
  if (unit === "rate") return formatRate(value);
  if (unit === "seconds") return value > 0 && value < 1 ? `${Math.round(value * 1000)} ms` : formatDuration(value * 1000);
  return Number.isInteger(value) ? group(value) : String(value);
}

/** The series as the text exposition writes it: `{status="wanted"}`, or nothing for a family without labels. */
function seriesOf(s: Sample): string {
  const labels = Object.entries(s.labels).filter(([, v]) => v !== undefined);
  return labels.length ? `{${labels.map(([k, v]) => `${k}="${String(v)}"`).join(",")}}` : "";
}

/** A number of the registry, with the metric and series it is in the raw text. */
function figure(name: string, s: Sample, unit?: Unit): SafeHtml {
  return html`<data value="${String(s.value)}" data-metric="${name}" data-series="${seriesOf(s)}">${formatValue(s.value, unit)}</data>`;
}

function stat(f: MetricFamily | undefined, label: string, unit?: Unit): SafeHtml {
  const s = f?.values[0];
  if (!f || !s) return html``;
  return html`<div class="stat" title="${f.help}"><b>${figure(f.name, s, unit)}</b><span>${label}</span></div>`;
}

function chart(f: MetricFamily | undefined, title: string, unit?: Unit): SafeHtml {
  if (!f) return html``;
  const samples = [...f.values].sort((a, b) => b.value - a.value);
  const shown = samples.slice(0, MAX_BARS);
  const max = Math.max(...shown.map((s) => s.value), 0);
  const rows = shown.map((s) => {
    const width = max > 0 ? Math.max(0, (s.value / max) * 100) : 0;
    const label = Object.values(s.labels)
      .filter((v) => v !== undefined)
      .join(" · ");
    return html`<li><span class="what">${label}</span><svg viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true"><rect class="track" width="100" height="10" rx="2"/><rect class="fill" width="${width.toFixed(2)}" height="10" rx="2"/></svg>${figure(f.name, s, unit)}</li>`;
  });
  return html`<figure class="card chart" id="${f.name}"><figcaption><h2>${title}</h2><p class="small muted">${f.help} <code>${f.name}</code></p></figcaption>
${shown.length ? html`<ul class="bars">${rows}</ul>` : html`<p class="muted">Nothing recorded yet.</p>`}
${samples.length > shown.length ? html`<p class="small muted">and ${samples.length - shown.length} more in the <a href="${RAW_METRICS_HREF}">raw text</a>.</p>` : ""}</figure>`;
}

/** dvault_queue_jobs by queue and state, with the lag and the paused flag, as a table (cards on a phone). */
function queueTable(byName: Map<string, MetricFamily>): SafeHtml {
  const jobs = byName.get("dvault_queue_jobs");
  if (!jobs?.values.length) return html``;
  const lag = byName.get("dvault_queue_lag_seconds");
  const paused = byName.get("dvault_queue_paused");
  const queues = [...new Set(jobs.values.map((s) => String(s.labels.queue)))];
  const cell = (queue: string, state: string) => {
    const s = jobs.values.find((v) => v.labels.queue === queue && v.labels.state === state);
    return html`<td class="num" data-label="${state}">${s ? figure(jobs.name, s) : "—"}</td>`;
  };
  return html`<div class="card"><h2>Queue depth</h2><p class="small muted">${jobs.help} <code>${jobs.name}</code></p>
<table class="cards"><thead><tr><th>queue</th>${QUEUE_STATES.map((st) => html`<th class="num">${st}</th>`)}<th class="num">oldest waiting</th></tr></thead>
${queues.map((q) => {
  const l = lag?.values.find((v) => v.labels.queue === q);
  const isPaused = paused?.values.some((v) => v.labels.queue === q && v.value === 1);
  return html`<tr><td data-label="queue">${q} ${isPaused ? pill("paused", "warn") : ""}</td>${QUEUE_STATES.map((st) => cell(q, st))}<td class="num" data-label="oldest waiting">${l && lag ? figure(lag.name, l, "seconds") : "—"}</td></tr>`;
})}</table></div>`;
}

export function metricsPage(families: readonly MetricFamily[], at: Date): string {
  const byName = new Map(families.map((f) => [f.name, f]));
  const body = html`
<h1>Metrics <span class="muted small">at ${at.toISOString().slice(0, 19).replace("T", " ")} UTC · <a href="/metrics">refresh</a> · <a href="${RAW_METRICS_HREF}">raw Prometheus text</a></span></h1>
<p class="muted">What a Prometheus scraper reads from <code>/metrics</code>, read from the same registry at this moment. Counters count since this process started.</p>
<div class="card"><div class="stats">${FIGURES.map((f) => stat(byName.get(f.name), f.label, f.unit))}</div></div>
${queueTable(byName)}
<div class="grid2">${CHARTS.map((c) => chart(byName.get(c.name), c.title, c.unit))}</div>
<div class="card"><h2>This process</h2><div class="stats">${PROCESS.map((f) => stat(byName.get(f.name), f.label, f.unit))}</div></div>`;
  return layout({ title: "Metrics", nav: "metrics", body });
}
