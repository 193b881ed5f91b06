// An alert (and its daily reminder) as a short mail: HTML through the escape-by-default html`` template, so
// nothing the service or a failure message provided can become markup, and its plain-text twin.
import { neutralizeControls, shownInTerminal, terminalText } from "../text/controls.ts";
import { html } from "../text/html.ts";
import type { AlertKind } from "../db/alert.repository.ts";
import { C, formatTime, type RenderedMessage, type RenderOptions, text } from "./render-common.ts";

/** An alert as rendered and delivered (src/digest/alerts.ts decides when). */
export type AlertNotice = {
  id: string;
  kind: AlertKind;
  subject: string;
  title: string;
  body: string;
  command?: string;
  openedAt: Date;
  reminder: boolean;
};

export function renderAlert(alert: AlertNotice, opts: RenderOptions): RenderedMessage {
  const tz = opts.timezone;
  // A source's last error may quote the service: its direction overrides and control characters shown, not applied.
  const subject = shownInTerminal(`${alert.reminder ? "dvault reminder" : "dvault alert"}: ${alert.title}`);
  const since = `Since ${formatTime(alert.openedAt, tz, true)} (${tz})`;
  const reminderNote = alert.reminder
    ? "This is a daily reminder: the problem is still there."
    : "You will get a reminder at most once a day while this lasts, and nothing more once it is resolved.";
  const command = alert.command
    ? html`<tr><td style="padding:10px 28px 0 28px;"><code style="display:inline-block;padding:6px 12px;border-radius:5px;background:${C.band};color:#d7f5e6;font-family:SFMono-Regular,Menlo,Consolas,monospace;font-size:14px;">${alert.command}</code></td></tr>`
    : "";
  const page = html`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${subject}</title></head>
<body style="margin:0;padding:0;background:${C.page};">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:${C.page};"><tr><td align="center" style="padding:28px 12px;">
<table role="presentation" width="560" cellpadding="0" cellspacing="0" border="0" style="width:560px;max-width:100%;background:${C.card};border:1px solid ${C.border};border-radius:12px;overflow:hidden;">
<tr><td style="background:${C.badInk};padding:20px 28px;"><div style="${text(12, "#ffd9d4", 700, "letter-spacing:2px;text-transform:uppercase;")}">dvault ${alert.reminder ? "reminder" : "alert"}</div>
<div style="margin-top:6px;${text(20, "#ffffff", 700)}">${alert.title}</div></td></tr>
<tr><td style="padding:22px 28px 6px 28px;${text(15, C.ink)}">${alert.body}</td></tr>
${command}
<tr><td style="padding:18px 28px 24px 28px;${text(12, C.faint)}">${since}. ${reminderNote}${opts.idempotencyKey ? html`<br>Alert ${opts.idempotencyKey}` : ""}</td></tr>
</table></td></tr></table></body></html>`;
  const textBody = [
    `${alert.reminder ? "dvault reminder" : "dvault alert"}: ${alert.title}`,
    "",
    alert.body,
    ...(alert.command ? ["", `Run: ${alert.command}`] : []),
    "",
    `${since}. ${reminderNote}`,
    ...(opts.idempotencyKey ? [`Alert ${opts.idempotencyKey}`] : []),
    "",
  ].join("\n");
  // Control characters shown as escapes in the plain text, as in a digest's (render-text.ts).
  return { subject, html: page.text, text: terminalText(textBody), preheader: neutralizeControls(alert.body) };
}
