// The job contract: every job's name and the payload it carries, which src/ can import (it may not import the
// catalogue in jobs/). The maps are empty here and filled by declaration merging, each entry beside the schema
// of its payload, in the folder that owns the job: `sync.source` in src/sync/sync-job.ts, `download.file` in
// src/downloads/download-job.ts, the worker's own jobs in jobs/*/definition.ts. The Producer is typed by them
// (a misspelt name or a wrong payload does not compile), and jobs/definitions.ts fails to compile when the
// catalogue and the contract disagree (a job without a definition, or a definition the contract lacks).

/** Job name → payload (ids only: job data sits in Redis in clear text). */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging (above)
export interface JobPayloads {}

/**
 * Job name → what the caller knows that orders it in its queue, for a job whose definition gives a priority
 * (`download.file`: the row's class and age). The definition turns it into BullMQ's priority; no caller does.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging (above)
export interface JobRankings {}

export type JobName = keyof JobPayloads & string;

/** The ranking a job's enqueue takes (never for a job without one). */
export type RankingOf<N extends string> = N extends keyof JobRankings ? JobRankings[N] : never;
