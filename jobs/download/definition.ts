// download.file: its definition lives with its body in src/downloads (file-job-definition.ts, file-job.ts), which
// `download --once` runs too; the catalogue takes it from here.
export { DownloadFilePayload, downloadJobId } from "../../src/downloads/download-job.ts";
export { downloadFileDefinition } from "../../src/downloads/file-job-definition.ts";
