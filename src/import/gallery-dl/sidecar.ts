// gallery-dl's metadata sidecar (`--write-metadata`): `<file name>.<ext>.json` beside the file, the
// deviation object as gallery-dl kept it (docs/service-behaviour.md#gallery-dl-sidecar). Only what an
// import needs is read, each field on its own: a sidecar that says less, or something odd, still helps. It is
// read as a file of a folder dvault does not own (src/foreign-file.ts): a link, a FIFO or a device at its name, or
// one past SIDECAR_MAX_BYTES, is no sidecar; the walk reports such an entry for what it is.
import { readForeignFile } from "../../foreign-file.ts";
import { z } from "zod";

/** gallery-dl's sidecars are a few kilobytes; the service's longest descriptions keep them well under this. */
export const SIDECAR_MAX_BYTES = 16 * 1024 * 1024;

const int = z
  .union([z.number(), z.string().regex(/^\d{1,15}$/)])
  .transform(Number)
  .pipe(z.number().int().nonnegative());

const SidecarSchema = z.looseObject({
  deviationid: z
    .string()
    .regex(/^[0-9A-Fa-f-]{36}$/)
    .transform((s) => s.toUpperCase())
    .optional()
    .catch(undefined),
  index: int.optional().catch(undefined),
  index_file: int.optional().catch(undefined),
  num: int.optional().catch(undefined),
  url: z.string().optional().catch(undefined),
  is_original: z.boolean().optional().catch(undefined),
  target: z
    .looseObject({ src: z.string().optional().catch(undefined) })
    .optional()
    .catch(undefined),
});

export type Sidecar = {
  deviationid?: string;
  index?: number;
  indexFile?: number;
  num?: number;
  url?: string;
  isOriginal?: boolean;
  /** The URL gallery-dl fetched the file from (its query, the signature, dropped). */
  targetPath?: string;
};

/** The sidecar of `file`, or undefined when there is none, it is refused (see above) or it is not gallery-dl's JSON. */
export async function readSidecar(file: string, signal?: AbortSignal): Promise<Sidecar | undefined> {
  let text: string;
  try {
    text = (await readForeignFile(`${file}.json`, { maxBytes: SIDECAR_MAX_BYTES, ...(signal ? { signal } : {}) })).toString("utf8");
  } catch {
    // Stopped (SIGINT, SIGTERM): the run ends; any other refusal means no sidecar.
    signal?.throwIfAborted();
    return undefined;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = SidecarSchema.safeParse(json);
  if (!parsed.success) return undefined;
  const s = parsed.data;
  const out: Sidecar = {};
  if (s.deviationid !== undefined) out.deviationid = s.deviationid;
  if (s.index !== undefined) out.index = s.index;
  if (s.index_file !== undefined) out.indexFile = s.index_file;
  if (s.num !== undefined) out.num = s.num;
  if (s.url !== undefined) out.url = s.url;
  if (s.is_original !== undefined) out.isOriginal = s.is_original;
  const src = s.target?.src;
  if (src !== undefined) out.targetPath = src.split("?")[0] as string;
  return out;
}
