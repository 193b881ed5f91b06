// Turns a digest into what people read: an HTML mail (render-html.ts, through the
// escape-by-default html`` template), a plain-text twin (render-text.ts), and a subject line with the counts.
// Alerts are rendered by render-alert.ts, which src/digest/alerts.ts imports itself.
import { digestSubject, type RenderedMessage, type RenderOptions, summaryLine } from "./render-common.ts";
import { digestHtml } from "./render-html.ts";
import { digestText } from "./render-text.ts";
import type { DigestData } from "./types.ts";

export function renderDigest(data: DigestData, opts: RenderOptions): RenderedMessage {
  const subject = digestSubject(data.counts, data.window.end, opts.timezone);
  const preheader = summaryLine(data.counts) || "Nothing new in this window.";
  return { subject, preheader, html: digestHtml(data, opts, subject, preheader), text: digestText(data, opts) };
}
