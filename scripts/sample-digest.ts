// A sample digest for the pictures and examples in docs/: fixture data in DigestData's shape, with generated
// SVG thumbnails (data: URIs), read by scripts/render-digest-screenshot.ts and scripts/render-discord-embed.ts.
import { countDigest } from "../src/digest/collect.ts";
import type { DeviationRef, DigestData } from "../src/digest/types.ts";

export const SAMPLE_TZ = "Europe/Berlin";
const at = (iso: string) => new Date(iso);

/** A small landscape in SVG: sky gradient, a sun, three layers of hills; the palette by hue. */
function art(seed: number, hue: number, kind: "hills" | "sea" | "night" = "hills"): string {
  const rnd = (n: number) => {
    const x = Math.sin(seed * 9301 + n * 49297) * 233280;
    return x - Math.floor(x);
  };
  const w = 352;
  const h = 264;
  const sky1 = kind === "night" ? `hsl(${hue},45%,12%)` : `hsl(${hue},70%,${kind === "sea" ? 78 : 72}%)`;
  const sky2 = kind === "night" ? `hsl(${hue + 30},55%,28%)` : `hsl(${hue + 35},80%,88%)`;
  const sun = kind === "night" ? `hsl(50,90%,88%)` : `hsl(${35 + (hue % 20)},95%,${kind === "sea" ? 70 : 64}%)`;
  const water = 195 + (hue % 25);
  const hill = (y: number, amp: number, light: number, n: number) => {
    const pts: string[] = [`0,${h}`];
    for (let i = 0; i <= 8; i++) pts.push(`${(i * w) / 8},${(y + Math.sin(i * 0.9 + rnd(n) * 6) * amp + rnd(n + i) * amp * 0.6).toFixed(1)}`);
    pts.push(`${w},${h}`);
    return `<polygon points="${pts.join(" ")}" fill="hsl(${hue + (kind === "sea" ? 180 : 110)},${kind === "night" ? 30 : 35}%,${light}%)"/>`;
  };
  const stars =
    kind === "night"
      ? Array.from(
          { length: 40 },
          (_, i) =>
            `<circle cx="${(rnd(i + 50) * w).toFixed(1)}" cy="${(rnd(i + 90) * h * 0.55).toFixed(1)}" r="${(rnd(i) * 1.3 + 0.3).toFixed(2)}" fill="#fff" opacity="${(0.4 + rnd(i + 7) * 0.6).toFixed(2)}"/>`,
        ).join("")
      : "";
  const sea =
    kind === "sea"
      ? `<rect x="0" y="${h * 0.62}" width="${w}" height="${h * 0.38}" fill="hsl(${water},45%,40%)"/>` +
        Array.from(
          { length: 7 },
          (_, i) =>
            `<rect x="${(rnd(i + 30) * w * 0.8).toFixed(0)}" y="${(h * 0.66 + i * 11).toFixed(0)}" width="${(40 + rnd(i) * 80).toFixed(0)}" height="2" fill="#fff" opacity="0.35"/>`,
        ).join("")
      : "";
  const layers = kind === "sea" ? hill(h * 0.6, 10, 30, 1) : hill(h * 0.55, 18, 58, 1) + hill(h * 0.68, 16, 44, 2) + hill(h * 0.8, 12, 30, 3);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">
<defs><linearGradient id="s" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${sky1}"/><stop offset="1" stop-color="${sky2}"/></linearGradient></defs>
<rect width="${w}" height="${h}" fill="url(#s)"/>${stars}<circle cx="${(w * (0.25 + rnd(3) * 0.5)).toFixed(0)}" cy="${(h * (0.25 + rnd(4) * 0.15)).toFixed(0)}" r="${(22 + rnd(5) * 18).toFixed(0)}" fill="${sun}"/>${layers}${sea}</svg>`;
  return `data:image/svg+xml;base64,${Buffer.from(svg).toString("base64")}`;
}

let n = 0;
function dev(title: string, artist: string, thumb: string, archived: DeviationRef["archived"] = null): DeviationRef {
  n++;
  const slug = title.replace(/[^A-Za-z0-9]+/g, "-").replace(/^-|-$/g, "");
  return {
    deviationid: `dev-${n}`,
    title,
    url: `https://www.deviantart.com/${artist.toLowerCase()}/art/${slug}-${1000200 + n}`,
    sha256: null,
    thumbUrl: thumb,
    archived,
    isMature: false,
    removedReason: null,
  };
}

const ME = "MiraSketches";
const harbour = dev("Lantern Harbour at Dusk", ME, art(1, 20, "sea"), "original");
const moth = dev("Moth Study in Amber", ME, art(2, 35), "original");
const meadow = dev("Glass Meadow", ME, art(3, 150));

const base: Omit<DigestData, "counts"> = {
  window: { start: at("2026-11-02T07:00:00Z"), end: at("2026-11-03T07:00:00Z") },
  generatedAt: at("2026-11-03T07:00:02Z"),
  accounts: [{ name: "mira", username: ME, baselineComplete: true }],
  feedback: {
    faves: [
      { account: "mira", deviation: harbour, people: 12, names: ["amberKite", "echoBrush", "inkVellum", "lunarQuill"], latestAt: at("2026-11-03T06:12:00Z") },
      { account: "mira", deviation: moth, people: 4, names: ["driftRune", "fableInk", "mossyEcho", "saffronPixel"], latestAt: at("2026-11-02T19:40:00Z") },
      { account: "mira", deviation: meadow, people: 1, names: ["quietKite"], latestAt: at("2026-11-02T15:03:00Z") },
    ],
    favesTotal: 17,
    favedWorks: 3,
    comments: [
      {
        account: "mira",
        kind: "comment",
        author: "inkVellum",
        body: "The reflections in the water are gorgeous. How long did the lanterns take? They glow like real paper.",
        postedAt: at("2026-11-02T21:14:00Z"),
        deviation: harbour,
      },
      {
        account: "mira",
        kind: "reply",
        author: "echoBrush",
        body: "Agreed, and that sky! Saving this for reference.",
        postedAt: at("2026-11-02T22:02:00Z"),
        deviation: harbour,
      },
    ],
    commentsTotal: 2,
    watchers: [
      { account: "mira", username: "velvetAtlas", usericon: null, at: at("2026-11-02T11:00:00Z") },
      { account: "mira", username: "paperComet", usericon: null, at: at("2026-11-02T16:30:00Z") },
      { account: "mira", username: "hollowTide", usericon: null, at: at("2026-11-03T05:10:00Z") },
    ],
    watchersTotal: 3,
    other: [],
  },
  mentions: [
    {
      account: "mira",
      type: "mention.comment",
      by: "lunarQuill",
      body: "@MiraSketches would love to see your take on this prompt!",
      deviation: dev("Inktober Prompt List", "lunarQuill", art(9, 280)),
      at: at("2026-11-02T13:25:00Z"),
    },
  ],
  mentionsTotal: 1,
  notes: {
    unread: [
      {
        account: "mira",
        noteid: "1",
        sender: "harborPress",
        subject: "Print request: Lantern Harbour",
        preview: "Hi Mira! We'd love to include Lantern Harbour in our winter print run. Would A3 work for you?",
        sentAt: at("2026-11-02T17:48:00Z"),
      },
      {
        account: "mira",
        noteid: "2",
        sender: "amberKite",
        subject: "Art trade?",
        preview: "Your moth studies are lovely. Would you be up for a small art trade this month?",
        sentAt: at("2026-11-03T06:31:00Z"),
      },
    ],
    total: 2,
    olderUnread: 1,
  },
  deviations: {
    items: [
      {
        account: "mira",
        artist: "echoBrush",
        deviation: dev("Northern Lights over Fjord", "echoBrush", art(11, 230, "night"), "original"),
        publishedAt: at("2026-11-03T05:50:00Z"),
        type: "image",
      },
      {
        account: "mira",
        artist: "saffronPixel",
        deviation: dev("Autumn Terraces", "saffronPixel", art(12, 25)),
        publishedAt: at("2026-11-02T20:10:00Z"),
        type: "image",
      },
      {
        account: "mira",
        artist: "echoBrush",
        deviation: dev(`<script>alert("hi")</script> Night Market`, "echoBrush", art(13, 300, "night")),
        publishedAt: at("2026-11-02T18:00:00Z"),
        type: "image",
      },
      {
        account: "mira",
        artist: "driftRune",
        deviation: dev("Tidepool Sketches", "driftRune", art(14, 180, "sea"), "original"),
        publishedAt: at("2026-11-02T14:22:00Z"),
        type: "image",
      },
      {
        account: "mira",
        artist: "lunarQuill",
        deviation: dev("Moonrise Orchard", "lunarQuill", art(15, 260, "night")),
        publishedAt: at("2026-11-02T12:05:00Z"),
        type: "image",
      },
      {
        account: "mira",
        artist: "saffronPixel",
        deviation: dev("Green Valley Study", "saffronPixel", art(16, 90)),
        publishedAt: at("2026-11-02T09:41:00Z"),
        type: "image",
      },
    ],
    total: 6,
  },
  changes: [
    {
      account: "mira",
      kind: "artist_unavailable",
      username: "fernAndFable",
      deviation: null,
      reason: "artist_deactivated",
      relation: "watching",
      works: 12,
      at: at("2026-11-02T16:00:00Z"),
    },
    {
      account: "mira",
      kind: "favourite_removed",
      username: "glassOrchard",
      deviation: { ...dev("Comet over the Library", "glassOrchard", art(21, 210, "night"), "original"), removedReason: "deleted" },
      reason: "deleted",
      at: at("2026-11-02T23:30:00Z"),
    },
  ],
  health: {
    accounts: [
      { name: "mira", state: "ok", reason: null, since: null, refreshAgeDays: 83, command: "dvault auth login --account mira", problem: "refresh_token_old" },
    ],
    failingSources: [],
    unavailableSources: [],
    incompleteSources: [],
    unreadable: { count: 0, lastSeenAt: null },
    deferredDownloads: { count: 4, oldest: at("2026-11-01T10:00:00Z") },
    importedOriginals: 0,
    downloadsPaused: { paused: false },
    deliveries: [],
    disk: { path: "/srv/dvault/archive", freeBytes: 412.6 * 2 ** 30, totalBytes: 931.5 * 2 ** 30, low: false },
    alerts: [],
  },
};
/** The sample digest: one account's day, with every section filled. */
export const SAMPLE_DIGEST: DigestData = { ...base, counts: countDigest(base) };
