// Turning method parameters into the service's query and form syntax (expand lists, id arrays, bracketed
// fields, license options, journal and literature forms).
import type { Params, ParamValue } from "../transport.ts";
import type { JournalFields, License, LiteratureFields, OffsetListOptions } from "./params.ts";

const LIST_KEYS = ["limit", "startOffset", "ceiling", "signal", "maxWaitMs", "startCursor"] as const;

/** Separates listing options from request parameters. */
export function splitList<T extends OffsetListOptions & Record<string, unknown>>(params: T): { list: OffsetListOptions; rest: Params } {
  const listOptions: Record<string, unknown> = {};
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(params)) {
    if ((LIST_KEYS as readonly string[]).includes(key)) listOptions[key] = value;
    else rest[key] = value;
  }
  // Keys were sorted by name above; the values keep the caller's types (listing options vs Params).
  return { list: listOptions as OffsetListOptions, rest: rest as Params };
}

export function ownerParams(params: Params): Params {
  const { expand, ...rest } = params;
  return { ...rest, expand: Array.isArray(expand) ? joinExpand(expand.map(String)) : expand };
}

export function joinExpand(expand: readonly string[] | undefined): string | undefined {
  return expand && expand.length > 0 ? expand.join(",") : undefined;
}

export function list(values: readonly string[] | undefined): string[] | undefined {
  return values && values.length > 0 ? [...values] : undefined;
}

export function withList<T extends { deviationids: readonly string[] }>(params: T): Params {
  return { ...(params as Omit<T, "deviationids">), deviationids: [...params.deviationids] } as Params;
}

export function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** `{a: 1}` under "watch" → `{"watch[a]": 1}` (the service's nested-form syntax). */
export function bracketed(name: string, values: Readonly<Record<string | number, ParamValue>>): Params {
  const out: Params = {};
  for (const [key, value] of Object.entries(values)) out[`${name}[${key}]`] = value;
  return out;
}

export function licenseForm(license: License): Params {
  if (!license.creative_commons) return { "license_options[creative_commons]": false };
  return {
    "license_options[creative_commons]": true,
    "license_options[commercial]": license.commercial,
    "license_options[modify]": license.modify,
  };
}

export function journalForm(fields: Omit<JournalFields, "cover_image_deviation_id">): Params {
  return {
    title: fields.title,
    tags: [...fields.tags],
    is_mature: fields.is_mature,
    allow_comments: fields.allow_comments,
    ...licenseForm(fields.license),
  };
}

/** Every field from current+changes, so nothing is cleared by omission; cover per the service's rule. */
export function journalUpdateForm(current: JournalFields, changes: Partial<JournalFields>): Params {
  const merged = { ...current, ...definedOnly(changes) };
  const form: Params = journalForm(merged);
  if ("cover_image_deviation_id" in changes && changes.cover_image_deviation_id === null) {
    form.reset_cover_image_deviation_id = true;
  } else if (merged.cover_image_deviation_id) {
    form.cover_image_deviation_id = merged.cover_image_deviation_id;
  }
  return form;
}

export function literatureForm(fields: LiteratureFields): Params {
  const form: Params = {
    title: fields.title,
    tags: [...fields.tags],
    galleryids: [...fields.galleryids],
    is_mature: fields.is_mature,
    allow_comments: fields.allow_comments,
    ...licenseForm(fields.license),
  };
  if (fields.is_mature) {
    form.mature_level = fields.mature_level;
    form.mature_classification = fields.mature_classification ? [...fields.mature_classification] : undefined;
  }
  return form;
}
