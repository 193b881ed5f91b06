// Images of realistic weight for the thumbnail tests and bench/thumbnails.ts: noise with a gradient (so an
// encoder has real detail to keep, unlike a flat colour), in each format the service hands out.
import sharp from "sharp";

export type ImageFormat = "jpg" | "png" | "gif" | "webp";

/** A `width`×`height` image in `format`; `seed` varies the picture so sha256s differ. */
export async function makeImage(format: ImageFormat, width: number, height: number, seed = 0): Promise<Buffer> {
  const base = sharp({
    create: {
      width,
      height,
      channels: 3,
      background: { r: (seed * 37) % 256, g: (seed * 91) % 256, b: 120 },
      noise: { type: "gaussian", mean: 128, sigma: 40 },
    },
  });
  const gradient = Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><defs><linearGradient id="g"><stop offset="0" stop-color="#${(seed * 2654435761).toString(16).padStart(6, "0").slice(0, 6)}"/><stop offset="1" stop-color="#204060"/></linearGradient></defs><rect width="100%" height="100%" fill="url(#g)" opacity="0.6"/><circle cx="${width / 2}" cy="${height / 2}" r="${Math.min(width, height) / 3}" fill="#f0c040" opacity="0.7"/></svg>`,
  );
  const img = base.composite([{ input: gradient }]);
  switch (format) {
    case "jpg":
      return img.jpeg({ quality: 90 }).toBuffer();
    case "png":
      return img.png({ compressionLevel: 6 }).toBuffer();
    case "gif":
      return img.gif().toBuffer();
    case "webp":
      return img.webp({ quality: 85 }).toBuffer();
  }
}
