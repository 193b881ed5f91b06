// Where the archive's objects are kept (DVAULT_STORAGE, DVAULT_S3_*): the fragment of the environment schema
// that src/config.ts merges in, the checks across variables, and StorageConfig. Like the digest's settings
// (src/config/digest.ts) it lives with the config, so the environment is read in one place. The credentials'
// *_FILE variants are read with the other secret files (src/config/secret-files.ts) before the schema sees them.
import { z } from "zod";
import { optionalHttpUrl, emptyAsUndefined } from "./fields.ts";

export type S3Credentials = Readonly<{ accessKeyId: string; secretAccessKey: string }>;

export type S3StorageConfig = Readonly<{
  kind: "s3";
  /** An S3-compatible server's URL; undefined means AWS itself (the region picks the endpoint). */
  endpoint: string | undefined;
  bucket: string;
  region: string;
  /** Prepended to every key: "" or a folder ending in "/". */
  prefix: string;
  /** Path-style addressing (http://host/bucket/key), which most servers other than AWS need. */
  forcePathStyle: boolean;
  /** From DVAULT_S3_ACCESS_KEY_ID / DVAULT_S3_SECRET_ACCESS_KEY (or their *_FILE); undefined: the SDK's own chain. */
  credentials: S3Credentials | undefined;
  /** Whether the dashboard sends browsers to a presigned URL of the bucket instead of streaming the file itself. */
  presign: boolean;
  presignTtlSeconds: number;
}>;

export type StorageConfig = Readonly<{ kind: "local" }> | S3StorageConfig;

/** Settings that may come from a file instead (`<NAME>_FILE`, src/config/secret-files.ts). */
export const STORAGE_SECRET_FILES = ["DVAULT_S3_ACCESS_KEY_ID", "DVAULT_S3_SECRET_ACCESS_KEY"] as const;

const TRUE = ["1", "true", "yes", "on"];
const FALSE = ["0", "false", "no", "off"];

const optionalBool = z.preprocess(
  emptyAsUndefined,
  z
    .string()
    .transform((v) => v.trim().toLowerCase())
    .refine((v) => TRUE.includes(v) || FALSE.includes(v), { message: "expects true or false" })
    .transform((v) => TRUE.includes(v))
    .optional(),
);

const optionalString = z.preprocess(emptyAsUndefined, z.string().optional());

/** Merged into src/config.ts's EnvSchema. */
export const STORAGE_ENV = {
  DVAULT_STORAGE: z.preprocess(
    (v) => (typeof v === "string" && v.trim() !== "" ? v.trim().toLowerCase() : undefined),
    z.enum(["local", "s3"], { message: "expects local (the archive folder) or s3 (an S3-compatible bucket)" }).default("local"),
  ),
  DVAULT_S3_ENDPOINT: optionalHttpUrl("expects the server's http:// or https:// URL, such as http://127.0.0.1:3900 (leave it empty for AWS)"),
  DVAULT_S3_BUCKET: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { message: "expects a bucket name: 3 to 63 lower-case letters, digits, . and -" })
      .optional(),
  ),
  DVAULT_S3_REGION: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^[a-z0-9-]+$/, { message: "expects a region name such as us-east-1" })
      .default("us-east-1"),
  ),
  DVAULT_S3_PREFIX: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => checkPrefix(v) !== undefined, { message: "expects a folder inside the bucket such as dvault/ (no empty, . or .. parts)" })
      .optional(),
  ),
  DVAULT_S3_ACCESS_KEY_ID: optionalString,
  DVAULT_S3_SECRET_ACCESS_KEY: optionalString,
  DVAULT_S3_FORCE_PATH_STYLE: optionalBool,
  DVAULT_S3_PRESIGN: optionalBool,
  DVAULT_S3_PRESIGN_TTL: z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number({ message: "expects seconds, a whole number from 1 to 604800 (7 days)" })
      .int({ message: "expects seconds, a whole number from 1 to 604800 (7 days)" })
      .min(1, { message: "expects seconds, a whole number from 1 to 604800 (7 days)" })
      .max(604_800, { message: "expects seconds, a whole number from 1 to 604800 (7 days)" })
      .default(300),
  ),
};

type StorageEnvShape = typeof STORAGE_ENV;
export type StorageEnv = z.output<z.ZodObject<StorageEnvShape>>;

/** "a/b" or "/a/b/" → "a/b/"; undefined when a part is empty, "." or "..". */
function checkPrefix(raw: string): string | undefined {
  const parts = raw
    .trim()
    .replace(/^\/+|\/+$/g, "")
    .split("/");
  if (parts.length === 1 && parts[0] === "") return "";
  if (parts.some((p) => p === "" || p === "." || p === ".." || p.includes("\\"))) return undefined;
  return `${parts.join("/")}/`;
}

/**
 * The storage settings, or the problems with them (each one line naming the variable). Only DVAULT_STORAGE=s3
 * needs the rest: with local storage the S3 variables are not looked at.
 */
export function storageConfigFrom(e: StorageEnv): { storage: StorageConfig; problems: string[] } {
  if (e.DVAULT_STORAGE === "local") return { storage: Object.freeze({ kind: "local" }), problems: [] };
  const problems: string[] = [];
  if (e.DVAULT_S3_BUCKET === undefined) problems.push("DVAULT_S3_BUCKET must be set when DVAULT_STORAGE is s3");
  const accessKeyId = e.DVAULT_S3_ACCESS_KEY_ID?.trim() || undefined;
  const secretAccessKey = e.DVAULT_S3_SECRET_ACCESS_KEY?.trim() || undefined;
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    problems.push("DVAULT_S3_ACCESS_KEY_ID and DVAULT_S3_SECRET_ACCESS_KEY go together: set both, or neither to use the AWS SDK's own credentials");
  }
  const storage: S3StorageConfig = Object.freeze({
    kind: "s3",
    endpoint: e.DVAULT_S3_ENDPOINT?.replace(/\/+$/, ""),
    bucket: e.DVAULT_S3_BUCKET ?? "",
    region: e.DVAULT_S3_REGION,
    prefix: checkPrefix(e.DVAULT_S3_PREFIX ?? "") ?? "",
    forcePathStyle: e.DVAULT_S3_FORCE_PATH_STYLE ?? e.DVAULT_S3_ENDPOINT !== undefined,
    credentials: accessKeyId !== undefined && secretAccessKey !== undefined ? Object.freeze({ accessKeyId, secretAccessKey }) : undefined,
    presign: e.DVAULT_S3_PRESIGN ?? false,
    presignTtlSeconds: e.DVAULT_S3_PRESIGN_TTL,
  });
  return { storage, problems };
}

/** A bucket in words for messages and status: s3://bucket/prefix at the endpoint's host. Never a credential. */
export function describeBucket(s3: Pick<S3StorageConfig, "bucket" | "prefix" | "endpoint" | "region">): string {
  const where = s3.endpoint !== undefined ? new URL(s3.endpoint).host : `AWS ${s3.region}`;
  return `s3://${s3.bucket}/${s3.prefix} at ${where}`;
}
