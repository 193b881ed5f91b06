// Every setting documented once: its section, what it does, whether it is a secret, and its default as the
// schema applies it (src/config.ts's EnvSchema). The settings file's commented template (`dvault config
// --template`, and .env.example), the README's settings table and `dvault config --help`'s list of variables are all
// rendered from here; scripts/checks/settings-docs.ts fails when a committed copy drifts.
import { DEFAULT_SOURCE_EVERY_MS, SOURCE_NAMES } from "../config-defaults.ts";
import { EnvSchema } from "../config.ts";
import { describeSchedule, type ScheduleVariable, scheduleVariable } from "./schedules.ts";
import { DIGEST_SECRET_FILES } from "./digest.ts";
import { STORAGE_SECRET_FILES } from "./storage.ts";
import type { Origin, SettingsLayers } from "./settings-file.ts";

export type SettingName = keyof typeof EnvSchema.shape;

type Section = "state" | "service" | "worker" | "archive" | "s3" | "dashboard" | "digest" | "hostile" | "log";

type SettingDoc = Readonly<{
  section: Section;
  /** What it does and what it accepts, in Markdown (the template drops the backticks). */
  text: string;
  /** Never printed: `dvault config` masks it. */
  secret?: true;
  /** The default when the schema computes it later (written as a value that changes nothing when set). */
  shownDefault?: string;
  /** The default in words, when it depends on something else. */
  defaultWords?: string;
}>;

const SECTIONS: Record<Section, string> = {
  state: "Where dvault keeps its state",
  service: "The service and your app",
  worker: "The worker and its schedules",
  archive: "The archive and its downloads",
  s3: "Originals and thumbnails in an S3-compatible bucket",
  dashboard: "The dashboard",
  digest: "Digests and alerts",
  hostile: "A hostile or broken service",
  log: "Logging",
};

const SCHEDULE_DEFAULTS = Object.fromEntries(
  SOURCE_NAMES.map((s) => [scheduleVariable(s), describeSchedule({ every: DEFAULT_SOURCE_EVERY_MS[s] }).replace(/^every /, "")]),
) as Record<ScheduleVariable, string>;

/** A source's schedule setting: what it syncs (with its verb), the rest said once for all of them. */
function scheduleDoc(variable: ScheduleVariable, what: string): SettingDoc {
  return {
    section: "worker",
    shownDefault: SCHEDULE_DEFAULTS[variable],
    text: `when ${what} synced: an interval (\`10min\`, \`6h\`, \`1d\`) or a 5-field cron expression read in \`DVAULT_SCHEDULE_TZ\` (\`0 * * * *\`); per account after a \`;\`: \`6h; alice=0 3 * * *\``,
  };
}

const DOCS: Readonly<Record<SettingName, SettingDoc>> = {
  DATABASE_URL: { section: "state", text: "PostgreSQL for the mirror, or `embedded` for a server dvault runs itself (data under DVAULT_DATA_DIR)" },
  DVAULT_ENGINE: { section: "state", text: "Where queues, locks and the shared pace live: `redis` (default) or `postgres` (PostgreSQL alone, no Redis)" },
  DVAULT_DATA_DIR: { section: "state", text: "dvault's own data, such as the embedded server's folder (default ~/.local/share/dvault)" },
  REDIS_URL: { section: "state", text: "Redis for queues and the shared throttle (`maxmemory-policy noeviction`)" },
  DVAULT_REDIS_PREFIX: {
    section: "state",
    shownDefault: "{dvault}",
    text: "key prefix in Redis, so several installs can share one server; the braces make it a Redis Cluster hash tag. Unset, an install that already has keys under `dvault` keeps that prefix ([Running on several machines](#running-on-several-machines))",
  },
  DVAULT_CONFIG_DIR: {
    section: "state",
    defaultWords: "`$XDG_CONFIG_HOME/dvault` or `~/.config/dvault`",
    text: "where the key file lives, and a refreshed grant the database has not taken yet (pending-grants/, sealed; keep this folder on a lasting disk)",
  },
  DVAULT_SECRET_KEY: {
    section: "state",
    secret: true,
    text: "32 bytes (64 hex digits or base64) that encrypt stored tokens (`openssl rand -hex 32`). When unset, a key file is created in `DVAULT_CONFIG_DIR` with mode 0600 on first use and its path printed. Back it up: without it the stored tokens are unreadable.",
  },
  DVAULT_API_BASE: { section: "service", text: "the service; point it at `dvault simulator` to experiment" },
  DVAULT_CLIENT_ID: { section: "service", text: "your app's client_id (a number), from the service's Applications & Keys page" },
  DVAULT_CLIENT_SECRET: { section: "service", secret: true, text: "your app's client_secret" },
  DVAULT_REDIRECT_URI: { section: "service", text: "the redirect URI registered with your app; `dvault auth login` listens on it" },
  DVAULT_OAUTH_VERSION: {
    section: "service",
    text: "`2.1` for apps registered since 2026 (PKCE only, no implicit grant; dvault always sends PKCE anyway), `2.0` for older ones; only changes what `dvault auth login --implicit` allows",
  },
  DVAULT_API_RATE_START: {
    section: "service",
    text: "requests per second a pacer key (client and user, or the CDN) starts at before it has learned anything; the pace rises while calls succeed, is cut on a 429 or CDN block, and the rate it learns is kept for the next run",
  },
  DVAULT_API_RATE_MIN: { section: "service", text: "the slowest pace, in requests per second" },
  DVAULT_API_RATE_MAX: { section: "service", text: "the fastest pace, in requests per second" },
  DVAULT_WORKER_ROLES: {
    section: "worker",
    shownDefault: "sync,downloads,digest,maintenance",
    text: "what `dvault worker` runs: any of `sync`, `downloads`, `digest`, `maintenance`, `http` (the dashboard; `--http` adds it) ([Running on several machines](#running-on-several-machines))",
  },
  DVAULT_SYNC_CONCURRENCY: { section: "worker", text: "sources one worker syncs at once" },
  DVAULT_SCHEDULE_TZ: { section: "worker", text: "the IANA time zone the sources' cron expressions are read in, e.g. `Europe/Berlin`" },
  DVAULT_SCHEDULE_PROFILE: scheduleDoc("DVAULT_SCHEDULE_PROFILE", "the account's profile is"),
  DVAULT_SCHEDULE_GALLERY: scheduleDoc("DVAULT_SCHEDULE_GALLERY", "your gallery is"),
  DVAULT_SCHEDULE_COLLECTIONS: scheduleDoc("DVAULT_SCHEDULE_COLLECTIONS", "your collections (favourites) are"),
  DVAULT_SCHEDULE_COMMENTS: scheduleDoc("DVAULT_SCHEDULE_COMMENTS", "comments on your works are"),
  DVAULT_SCHEDULE_PROFILE_POSTS: scheduleDoc("DVAULT_SCHEDULE_PROFILE_POSTS", "your status updates and journals are"),
  DVAULT_SCHEDULE_MESSAGES: scheduleDoc("DVAULT_SCHEDULE_MESSAGES", "the message centre is"),
  DVAULT_SCHEDULE_NOTES: scheduleDoc("DVAULT_SCHEDULE_NOTES", "your notes are"),
  DVAULT_SCHEDULE_WATCH_FEED: scheduleDoc("DVAULT_SCHEDULE_WATCH_FEED", "the watch feed is"),
  DVAULT_SCHEDULE_STASH: scheduleDoc("DVAULT_SCHEDULE_STASH", "Sta.sh is"),
  DVAULT_SCHEDULE_STATIC: scheduleDoc("DVAULT_SCHEDULE_STATIC", "what rarely changes (the countries and the service's policy texts) is"),
  DVAULT_SCHEDULE_TRACKED: scheduleDoc("DVAULT_SCHEDULE_TRACKED", "each tracked user's gallery, collections and journals are"),
  DVAULT_ARCHIVE_DIR: { section: "archive", text: "where files are stored" },
  DVAULT_DOWNLOAD_QUOTA: {
    section: "archive",
    text: "original downloads per account per service week (Monday 00:00 UTC); paid tiers get 150 or 300: set them per account with `dvault account set <name> --download-quota N`",
  },
  DVAULT_DOWNLOAD_CONCURRENCY: { section: "archive", text: "parallel file transfers of the downloads queue" },
  DVAULT_DOWNLOAD_CLAIM_BATCH: {
    section: "archive",
    text: "rows `download --once` claims from the downloads table at a time; a unit of claiming, never a ceiling: the run claims batch after batch until nothing is due",
  },
  DVAULT_MIN_FREE_BYTES: {
    section: "archive",
    text: "downloads pause (one log line) below this free space in the archive's filesystem and resume when space returns; bytes or `500MB`, `2GiB`",
  },
  DVAULT_DOWNLOAD_PRIORITY: {
    section: "archive",
    text: "which wanted originals spend the weekly allowance first (newest first within each): `gallery` (your own), `collections`, `tracked`, `other`",
  },
  DVAULT_RUN_ITEM_PATIENCE: {
    section: "archive",
    text: "how long `sync --once` and `download --once` keep trying one source or file that fails for a passing reason (429, CDN block, 5xx, reset, timeout), with a doubling backoff; only what still fails then waits for the schedule (15 min → daily)",
  },
  DVAULT_RUN_PATIENCE: { section: "archive", text: "a `--once` run gives up on everything still failing once this long passes with no success at all" },
  DVAULT_RUN_RETRY_DELAY: {
    section: "archive",
    text: "the first backoff of such a retry in a `--once` run; it doubles with each failure of the same item, up to 30 s",
  },
  DVAULT_STORAGE: {
    section: "s3",
    text: "`local` (the archive folder, the default) or `s3`. With `s3`, `DVAULT_ARCHIVE_DIR` still holds this machine's partial downloads (a download resumes from them); finished files go to the bucket",
  },
  DVAULT_S3_ENDPOINT: { section: "s3", text: "the server's URL for anything but AWS (Garage, MinIO's forks, Ceph…); empty for AWS itself" },
  DVAULT_S3_BUCKET: { section: "s3", text: "the bucket (required with `DVAULT_STORAGE=s3`; create it first)" },
  DVAULT_S3_REGION: { section: "s3", text: "the region; most servers other than AWS accept any, Garage wants its own (often `garage`)" },
  DVAULT_S3_PREFIX: { section: "s3", text: "a folder inside the bucket for dvault's objects, e.g. `dvault/`" },
  DVAULT_S3_ACCESS_KEY_ID: {
    section: "s3",
    secret: true,
    text: "the access key id, or `DVAULT_S3_ACCESS_KEY_ID_FILE` (a file holding it); leave both keys unset to use the AWS SDK's own chain (`AWS_ACCESS_KEY_ID`, `~/.aws`, an instance role)",
  },
  DVAULT_S3_SECRET_ACCESS_KEY: { section: "s3", secret: true, text: "the secret access key (never logged), or `DVAULT_S3_SECRET_ACCESS_KEY_FILE`" },
  DVAULT_S3_FORCE_PATH_STYLE: {
    section: "s3",
    defaultWords: "`true` when `DVAULT_S3_ENDPOINT` is set, `false` for AWS",
    text: "path-style addressing (`http://host/bucket/key`), which most servers other than AWS need",
  },
  DVAULT_S3_PRESIGN: {
    section: "s3",
    shownDefault: "false",
    text: "`true` when browsers can reach the bucket: the dashboard redirects a file's download to a presigned URL instead of streaming it through dvault",
  },
  DVAULT_S3_PRESIGN_TTL: { section: "s3", text: "seconds a presigned URL stays valid" },
  DVAULT_HTTP_HOST: {
    section: "dashboard",
    text: "the address of the dashboard (`dvault worker --http`, also `/healthz` and `/metrics`); `--http-host` overrides it. Any non-loopback address requires `DVAULT_HTTP_TOKEN`",
  },
  DVAULT_HTTP_PORT: { section: "dashboard", text: "the dashboard's port; `--http-port` overrides it" },
  DVAULT_HTTP_TOKEN: {
    section: "dashboard",
    secret: true,
    text: "at least 16 characters (`openssl rand -hex 32`). When set, every dashboard request must carry it: `Authorization: Bearer <token>`, or open `/login?token=<token>` once in the browser (sets an HttpOnly cookie)",
  },
  DVAULT_PUBLIC_URL: {
    section: "dashboard",
    text: "the address people use to reach the dashboard (`https://archive.example.org`): its host is served, its origin counts as same-origin behind a proxy that rewrites `Host`, digests link to their signed thumbnails there, and the Atom feeds' links start with it (Feeds)",
  },
  DVAULT_HTTP_ALLOWED_HOSTS: { section: "dashboard", text: "more host names the dashboard answers for, comma-separated (`nas.local,archive.lan`)" },
  DVAULT_HTTP_CONCURRENCY: {
    section: "dashboard",
    text: "requests of one dashboard page (`/archive`, `/item`, `/feeds` …) served at once; more wait their turn",
  },
  DVAULT_HTTP_QUEUE: {
    section: "dashboard",
    text: "requests of one page that may wait for a turn; past it, or past `DVAULT_HTTP_QUEUE_WAIT`, the answer is 503 with `Retry-After` (counted as `busy` in `/metrics`, apart from errors)",
  },
  DVAULT_HTTP_QUEUE_WAIT: { section: "dashboard", text: "how long a request waits for its turn before that 503" },
  DVAULT_DB_POOL_SIZE: {
    section: "dashboard",
    text: "PostgreSQL connections one dvault process opens at most, shared by its jobs and its dashboard; a query that finds them all in use waits 5 s, then the dashboard answers 503 with `Retry-After`. Every process counts against the server's `max_connections`",
  },
  DVAULT_DIGEST_CRON: { section: "digest", text: "when digests go out: a 5-field cron expression (minute hour day month weekday), read in `DVAULT_DIGEST_TZ`" },
  DVAULT_DIGEST_TZ: { section: "digest", text: "the IANA time zone of the schedule and of the times shown in digests, e.g. `Europe/Berlin`" },
  DVAULT_DIGEST_CHANNELS: {
    section: "digest",
    text: "where digests and alerts go: a comma-separated list of `smtp`, `file`, `webhook`, `ntfy`, `discord`. None: nothing is sent (`dvault digest --preview` still works)",
  },
  DVAULT_DIGEST_DIR: { section: "digest", text: "the `file` channel's directory: one `.html` and one `.txt` per digest or alert" },
  DVAULT_DIGEST_SEND_EMPTY: { section: "digest", text: "also send a digest when nothing happened and nothing needs attention" },
  DVAULT_SMTP_HOST: { section: "digest", text: "the SMTP server (required for the `smtp` channel)" },
  DVAULT_SMTP_PORT: { section: "digest", defaultWords: "`587`, or `465` when secure", text: "its port" },
  DVAULT_SMTP_SECURE: {
    section: "digest",
    text: "`true`: TLS from the first byte (port 465). `false`: STARTTLS when the server offers it, and required whenever a password is sent",
  },
  DVAULT_SMTP_USER: { section: "digest", text: "login name, if the server wants one" },
  DVAULT_SMTP_PASS: { section: "digest", secret: true, text: "its password (never logged)" },
  DVAULT_SMTP_FROM: { section: "digest", text: "the sender, e.g. `dvault <dvault@example.org>`; its domain ends every Message-ID" },
  DVAULT_SMTP_TO: { section: "digest", text: "one or more comma-separated recipients" },
  DVAULT_WEBHOOK_URL: { section: "digest", text: "the `webhook` channel's http(s) URL; it receives a JSON POST per digest or alert" },
  DVAULT_WEBHOOK_SECRET: {
    section: "digest",
    secret: true,
    text: "at least 16 characters (`openssl rand -hex 32`): the key of the `X-Dvault-Signature` HMAC (never logged)",
  },
  DVAULT_NTFY_URL: {
    section: "digest",
    text: "the `ntfy` channel's topic URL, e.g. `https://ntfy.sh/<a topic nobody guesses>` or a self-hosted server's `https://ntfy.example.org/dvault`",
  },
  DVAULT_NTFY_TOKEN: {
    section: "digest",
    secret: true,
    text: "an ntfy access token (`tk_…`), sent as `Authorization: Bearer` when the topic is protected (never logged); or `DVAULT_NTFY_TOKEN_FILE`",
  },
  DVAULT_DISCORD_WEBHOOK_URL: {
    section: "digest",
    secret: true,
    text: "the `discord` channel: the webhook URL Discord shows (`https://discord.com/api/webhooks/<id>/<token>`); a secret, never logged; or `DVAULT_DISCORD_WEBHOOK_URL_FILE`",
  },
  DVAULT_API_MAX_BODY: {
    section: "hostile",
    text: "the largest API answer read; past it the answer is cut, asked for again a few times, then kept as unreadable",
  },
  DVAULT_RENDITION_MAX_BYTES: {
    section: "hostile",
    text: "the largest file accepted when the API announced no size (free renditions); an announced size is its own cap",
  },
  DVAULT_MIN_THROUGHPUT: {
    section: "hostile",
    text: "bytes per second below which a transfer or an API answer is cut (after 10 s, over 30 s) and tried again later; `0` turns it off",
  },
  DVAULT_CDN_HOSTS: { section: "hostile", text: "the hosts a file's redirect may lead to; others are refused" },
  LOG_LEVEL: {
    section: "log",
    text: "`fatal` … `trace`, or `silent`: the worker's level. Logs are pretty in a terminal; off one, JSON lines from the worker, plain lines from a command. A command logs at `warn` unless `-v` (so `info` means `warn` there); `debug` and `trace` win everywhere",
  },
};

/** A setting as the catalogue knows it, its default rendered as text (undefined: none). */
export type Setting = Readonly<{ name: SettingName; section: string; text: string; secret: boolean; default: string | undefined; defaultWords?: string }>;

function schemaDefault(name: SettingName): string | undefined {
  const parsed = EnvSchema.shape[name].safeParse(undefined);
  return parsed.success && parsed.data !== undefined ? String(parsed.data) : undefined;
}

/** Every setting, in the catalogue's order (by section). */
export const SETTINGS: readonly Setting[] = (Object.keys(SECTIONS) as Section[]).flatMap((section) =>
  (Object.entries(DOCS) as [SettingName, SettingDoc][])
    .filter(([, doc]) => doc.section === section)
    .map(([name, doc]) => ({
      name,
      section: SECTIONS[section],
      text: doc.text,
      secret: doc.secret === true,
      default: doc.shownDefault ?? schemaDefault(name),
      ...(doc.defaultWords ? { defaultWords: doc.defaultWords } : {}),
    })),
);

/** Markdown as plain text: no backticks, a link's words without its target. */
const plain = (md: string) => md.replace(/`/g, "").replace(/\[([^\]]+)\]\([^)]*\)/g, "$1");

function wrap(text: string, width: number, lead: string): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line && lead.length + line.length + 1 + word.length > width) {
      lines.push(lead + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(lead + line);
  return lines;
}

/** A value as a settings file writes it: quoted when it holds spaces, # or quotes. */
export function fileValue(value: string): string {
  return /[\s#"'`]/.test(value) ? `"${value.replace(/"/g, '\\"')}"` : value;
}

const SECRET_FILES: readonly string[] = [...DIGEST_SECRET_FILES, ...STORAGE_SECRET_FILES];

/**
 * The settings file's template: every setting commented out at its default, with what it does. Copied as it is
 * it changes nothing; uncomment a line to set it.
 */
export function renderTemplate(): string {
  const out = [
    "# dvault's settings file, generated from src/config/catalogue.ts (dvault config --template; .env.example is this",
    "# template). dvault reads ./.env, or the file --config <file> or DVAULT_CONFIG names; the environment overrides it,",
    "# and a command's flag overrides both. One NAME=value a line (docker compose's env_file reads the same format);",
    "# quote a value with spaces. Every setting is optional; an invalid value stops dvault with one line naming it, and",
    "# so does a DVAULT_ name it does not read (a typo); other names are left to the file's other readers.",
    "# `dvault config` shows each setting's value and where it came from.",
  ];
  let section = "";
  for (const s of SETTINGS) {
    if (s.section !== section) {
      section = s.section;
      out.push("", `# ---- ${section} ${"-".repeat(Math.max(4, 100 - section.length))}`);
    }
    const text = plain(s.text);
    out.push(...wrap(`${text.charAt(0).toUpperCase()}${text.slice(1)}${text.endsWith(".") ? "" : "."}`, 118, "# "));
    if (s.defaultWords) out.push(`# Default: ${plain(s.defaultWords)}`);
    if (SECRET_FILES.includes(s.name)) out.push(`# Or ${s.name}_FILE=<path of a file holding it> (a container secret).`);
    out.push(`# ${s.name}=${s.default === undefined ? "" : fileValue(s.default)}`);
  }
  out.push(
    "",
    `# ---- docker compose only ${"-".repeat(79)}`,
    "# The password of its PostgreSQL user.",
    "# POSTGRES_PASSWORD=dvault",
    '# The s3 profile\'s Garage node secret (openssl rand -hex 32); README "Running on several machines".',
    "# GARAGE_RPC_SECRET=",
    "",
  );
  return out.join("\n");
}

const cell = (md: string) => md.replace(/\|/g, "\\|");

/** The README's settings table (between its markers), padded as Biome formats a table: lint and check agree. */
export function renderReadmeTable(): string {
  const rows = SETTINGS.map((s) => {
    const value = s.defaultWords ?? (s.default === undefined ? "—" : `\`${s.default}\``);
    return [`\`${s.name}\``, cell(value), `${cell(s.text)}${s.secret ? " (a secret: never logged, masked by `dvault config`)" : ""}`];
  });
  const header = ["variable", "default", "meaning"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => [...(r[i] ?? "")].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c + " ".repeat((widths[i] ?? 0) - [...c].length)).join(" | ")} |`;
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** `dvault --help`'s list: every variable by section. */
export function renderHelpList(): string {
  const bySection = new Map<string, string[]>();
  for (const s of SETTINGS) bySection.set(s.section, [...(bySection.get(s.section) ?? []), s.name]);
  return [...bySection].map(([section, names]) => wrap(names.join(" "), 118, "    ").join("\n").replace(/^ {4}/, `  ${section}:\n    `)).join("\n");
}

/** One setting as it is in effect: its value as given (secrets masked) and where it came from. */
export type EffectiveSetting = Readonly<{ name: SettingName; value: string | undefined; from: string; secret: boolean }>;

function originText(origin: Origin | undefined): string {
  if (!origin) return "default";
  if (origin.from === "file") return `file ${origin.path}`;
  if (origin.from === "flag") return `flag ${origin.flag}`;
  return origin.from;
}

/**
 * Every setting with its value and origin, from the layers applied at start; secrets masked, and URLs through
 * `maskUrl` (src/redact.ts, which this layer may not import).
 */
export function effectiveSettings(layers: SettingsLayers, maskUrl: (url: string) => string): EffectiveSetting[] {
  return SETTINGS.map((s) => {
    const given = layers.env[s.name];
    const viaFile = SECRET_FILES.includes(s.name) && given === undefined ? layers.env[`${s.name}_FILE`] : undefined;
    if (viaFile !== undefined)
      return { name: s.name, value: "***", from: `${originText(layers.origins.get(`${s.name}_FILE`))} (${s.name}_FILE)`, secret: true };
    const set = given !== undefined && given.trim() !== "";
    const value = set ? given : s.default;
    // A URL's password is masked in a mistyped one too (" postgres://…", "https:/…"): `dvault config` is run to find out why.
    const masked = value === undefined ? undefined : s.secret ? (set ? "***" : value) : /^\s*[a-z][a-z0-9+.-]*:\//i.test(value) ? maskUrl(value) : value;
    return { name: s.name, value: masked, from: set ? originText(layers.origins.get(s.name)) : "default", secret: s.secret };
  });
}
