// The simulator's images are pictures, over real sockets: every original and rendition it serves decodes (sharp,
// failing on any error), in the format its name and Content-Type say, at the aspect ratio its JSON announces,
// padded to exactly the size announced; the same bytes every time and through Range requests; videos keep their
// own bytes; a tiny size still gets its bytes.
import { createHash } from "node:crypto";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";

type Image = { src: string; width: number; height: number; filesize?: number };
type DeviationJson = { deviationid: string; content?: Image; preview?: Image; thumbs: Image[]; download_filesize?: number; videos?: Array<{ src: string }> };

const FORMAT_OF: Record<string, string> = { jpg: "jpeg", png: "png", gif: "gif", webp: "webp" };

let sim: Simulator;
let token: string;

async function api<T>(path: string): Promise<T> {
  const res = await fetch(sim.apiUrl + path, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

async function bytesOf(url: string, headers: Record<string, string> = {}): Promise<{ body: Buffer; type: string | null; status: number }> {
  const res = await fetch(url, { headers });
  return { body: Buffer.from(await res.arrayBuffer()), type: res.headers.get("content-type"), status: res.status };
}

/** What the service may round: each side of either image to a whole pixel. */
function sameRatio(a: { width: number; height: number }, b: { width: number; height: number }): boolean {
  return Math.abs(a.width * b.height - a.height * b.width) <= a.width + a.height + b.width + b.height;
}

async function expectPicture(label: string, url: string, announced: { width: number; height: number; size?: number }): Promise<string> {
  const { body, type, status } = await bytesOf(url);
  expect(status, label).toBe(200);
  const ext = /\.(\w+)$/.exec(new URL(url).pathname)?.[1] ?? "";
  const meta = await sharp(body, { failOn: "error" }).metadata();
  expect(meta.format, label).toBe(FORMAT_OF[ext]);
  expect(type, label).toBe(`image/${FORMAT_OF[ext]}`);
  expect(
    sameRatio({ width: meta.width ?? 0, height: meta.height ?? 0 }, announced),
    `${label}: ${meta.width}×${meta.height} for ${announced.width}×${announced.height}`,
  ).toBe(true);
  // It decodes to the end, not only its header.
  await sharp(body, { failOn: "error" }).raw().toBuffer();
  if (announced.size !== undefined) expect(body.length, label).toBe(announced.size);
  return meta.format ?? "";
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 11, dataset: { deviations: 16, favourites: 0, trackedUsers: 0 }, downloadQuota: 1000 });
  token = sim.issueUserToken().access_token;
});

afterAll(async () => {
  await sim?.close();
});

describe("the simulator's pictures", () => {
  it("serves every original and rendition as a picture of its format, at the announced ratio and size", async () => {
    const owner = sim.truth.ownerId;
    const works = [...sim.truth.deviations.values()].filter((d) => d.authorId === owner && !d.isDeleted && d.image !== null && !d.premiumFolder);
    const formats = new Set<string>();
    for (const d of works) {
      const json = await api<DeviationJson>(`/deviation/${d.deviationid}?mature_content=true`);
      const image = d.image as NonNullable<typeof d.image>;
      if (json.content) formats.add(await expectPicture(`${d.deviationid} content`, json.content.src, { ...json.content, size: json.content.filesize }));
      if (json.preview) await expectPicture(`${d.deviationid} preview`, json.preview.src, json.preview);
      for (const t of json.thumbs) await expectPicture(`${d.deviationid} thumb`, t.src, t);
      if (d.kind === "image" && d.isDownloadable) {
        const info = await api<{ src: string; width: number; height: number; filesize: number }>(`/deviation/download/${d.deviationid}`);
        formats.add(await expectPicture(`${d.deviationid} original`, info.src, { width: image.width, height: image.height, size: json.download_filesize }));
        expect(info.filesize).toBe(json.download_filesize);
      }
      for (const v of json.videos ?? []) {
        const video = await bytesOf(v.src);
        expect(video.type).toBe("video/mp4");
        expect(video.body.subarray(4, 8).toString("latin1")).toBe("ftyp");
      }
    }
    expect([...formats].sort()).toEqual(["gif", "jpeg", "png", "webp"]);
  });

  it("gives the same bytes every time, whole or in ranges, and the sha256 the simulator reports", async () => {
    const d = [...sim.truth.deviations.values()].find((x) => x.authorId === sim.truth.ownerId && x.kind === "image" && x.isDownloadable && !x.isDeleted);
    if (!d) throw new Error("no downloadable image");
    const { src } = await api<{ src: string }>(`/deviation/download/${d.deviationid}`);
    const whole = (await bytesOf(src)).body;
    expect(whole.equals((await bytesOf(src)).body)).toBe(true);
    expect(whole.equals(await sim.fileBytes(d.deviationid))).toBe(true);
    expect(createHash("sha256").update(whole).digest("hex")).toBe(await sim.fileSha256(d.deviationid));
    // A cut inside the picture, one at its end's neighbourhood and one in the padding.
    const cuts = [0, 37, 1500, Math.floor(whole.length / 2), whole.length];
    const parts: Buffer[] = [];
    for (let i = 0; i + 1 < cuts.length; i++) {
      const part = await bytesOf(src, { range: `bytes=${cuts[i]}-${(cuts[i + 1] as number) - 1}` });
      expect(part.status).toBe(206);
      parts.push(part.body);
    }
    expect(Buffer.concat(parts).equals(whole)).toBe(true);
  });

  it("keeps a file smaller than any picture at its size, and a large one a picture padded to it", async () => {
    const owner = sim.truth.ownerId;
    const [tiny, big] = [...sim.truth.deviations.values()].filter((x) => x.authorId === owner && x.kind === "image" && x.isDownloadable && !x.isDeleted);
    if (!tiny || !big) throw new Error("two downloadable images needed");
    const other = await startSimulator({
      seed: 11,
      dataset: { deviations: 16, favourites: 0, trackedUsers: 0 },
      fileSizes: { [tiny.deviationid]: 40, [big.deviationid]: 5_000_000 },
    });
    try {
      expect((await other.fileBytes(tiny.deviationid)).length).toBe(40);
      const large = await other.fileBytes(big.deviationid);
      expect(large.length).toBe(5_000_000);
      expect((await sharp(large, { failOn: "error" }).metadata()).format).toBe(FORMAT_OF[big.image?.ext ?? ""]);
    } finally {
      await other.close();
    }
  });
});
