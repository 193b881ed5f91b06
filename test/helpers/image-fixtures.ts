// Images of realistic weight for the thumbnail tests and bench/thumbnails.ts: noise with a gradient (so an
// encoder has real detail to keep, unlike a flat colour), in each format the service hands out.
import sharp from "sharp";

export type ImageFormat = "jpg" | "png" | "gif" | "webp";

/** Gaussian noise drawn at 1/`scale` of the size and enlarged: detail at that scale. */
async function noiseLayer(width: number, height: number, scale: number, seed: number): Promise<Buffer> {
  const w = Math.max(1, Math.ceil(width / scale));
  const h = Math.max(1, Math.ceil(height / scale));
  const layer = sharp({
    create: {
      width: w,
      height: h,
      channels: 3,
      background: { r: (seed * 37) % 256, g: (seed * 91) % 256, b: 120 },
      noise: { type: "gaussian", mean: 128, sigma: 60 },
    },
  });
  return layer
    .png()
    .toBuffer()
    .then((b) => sharp(b).resize(width, height, { kernel: "cubic", fit: "fill" }).png({ compressionLevel: 1 }).toBuffer());
}

/**
 * A `width`×`height` image in `format`; `seed` varies the picture so sha256s differ. Noise at three scales
 * (shapes, texture, grain) under a gradient and a disc, so every size down to a tile keeps detail to encode,
 * as a photograph or a painting does.
 */
export async function makeImage(format: ImageFormat, width: number, height: number, seed = 0): Promise<Buffer> {
  const [coarse, mid, fine] = await Promise.all([
    noiseLayer(width, height, 48, seed),
    noiseLayer(width, height, 8, seed + 1),
    noiseLayer(width, height, 1, seed + 2),
  ]);
  const gradient = Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><defs><linearGradient id="g"><stop offset="0" stop-color="#${(seed * 2654435761).toString(16).padStart(6, "0").slice(0, 6)}"/><stop offset="1" stop-color="#204060"/></linearGradient></defs><rect width="100%" height="100%" fill="url(#g)" opacity="0.5"/><circle cx="${width / 2}" cy="${height / 2}" r="${Math.min(width, height) / 3}" fill="#f0c040" opacity="0.6"/></svg>`,
  );
  const img = sharp(coarse).composite([
    { input: mid, blend: "soft-light" },
    { input: fine, blend: "soft-light" },
    { input: gradient, blend: "over" },
  ]);
  const flat = await img.png({ compressionLevel: 1 }).toBuffer();
  const out = sharp(flat);
  switch (format) {
    case "jpg":
      return out.jpeg({ quality: 90 }).toBuffer();
    case "png":
      return out.png({ compressionLevel: 6 }).toBuffer();
    case "gif":
      return out.gif().toBuffer();
    case "webp":
      return out.webp({ quality: 85 }).toBuffer();
  }
}
