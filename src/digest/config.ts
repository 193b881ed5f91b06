// The digest channel's type for the digest job's definition (jobs/digest/definition.ts); the digest's settings
// are parsed with the rest of the config (src/config/digest.ts), which src/digest imports directly.
export type { DigestChannel } from "../config/digest.ts";
