// The maintenance host's sweep of a bucket's unfinished multipart uploads (src/storage/upload-sweep.ts), through
// the job that runs it: schedules.reconcile, every 5 minutes on a host with the maintenance role. Uploads a day
// old under dvault's prefix are aborted; younger ones (a live process may still be sending them) stay.
import { utimes } from "node:fs/promises";
import path from "node:path";
import { CreateMultipartUploadCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { reconcileSchedulesHandler } from "../../jobs/reconcile-schedules/handler.ts";
import { createLogger } from "../../src/log.ts";
import { Producer } from "../../src/queue/producer.ts";
import { createServices, type Services } from "../../src/services.ts";
import { S3BlobStore } from "../../src/storage/s3-blob-store.ts";
import { openBlobStore } from "../../src/storage/store.ts";
import { STALE_UPLOAD_MS } from "../../src/storage/upload-sweep.ts";
import { testConfig } from "../helpers/config.ts";
import { createMirrorDb, type MirrorDb } from "../helpers/mirror-fixtures.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { leftovers, type S3TestServer, startS3Server } from "../helpers/s3-server.ts";
import { workerContext } from "../helpers/worker-context.ts";

const log = createLogger({ level: "silent" });
let s3: S3TestServer;
let m: MirrorDb;
let r: TestRedis;
let services: Services;
let producer: Producer;

beforeAll(async () => {
  [s3, m, r] = await Promise.all([startS3Server(), createMirrorDb(), createTestRedis()]);
  services = await createServices({ config: testConfig({ DATABASE_URL: m.db.url, DVAULT_REDIS_PREFIX: r.prefix, ...s3.env }), log });
  producer = new Producer([...JOB_DEFINITIONS], services.queues);
});
afterAll(async () => {
  await producer?.close();
  await services?.close();
  await Promise.all([s3?.close(), m?.drop(), r?.cleanup()]);
});

describe("schedules.reconcile on a maintenance host", () => {
  it("aborts the bucket's uploads left unfinished for a day and keeps the younger ones", async () => {
    const store = openBlobStore(services.config);
    if (!(store instanceof S3BlobStore)) throw new Error("the config names the bucket");
    const begin = async (Key: string) => (await store.client.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key }))).UploadId ?? "";
    const old = await begin("originals/aa/bb/killed.jpg");
    await begin("originals/cc/dd/running.jpg");
    // The server's own record of when the first was begun, set back past a day.
    const then = new Date(Date.now() - STALE_UPLOAD_MS - 60_000);
    await utimes(path.join(s3.dir, s3.bucket, "._S3rver_uploads", old, "key"), then, then);

    const ctx = workerContext({ log, services, producer });
    const result = await reconcileSchedulesHandler({}, ctx);
    expect(result).toMatchObject({ status: "done", abortedUploads: 1 });
    expect((await leftovers(s3.dir)).multipartUploads).toEqual([expect.stringMatching(/ originals\/cc\/dd\/running\.jpg$/)]);
  });
});
