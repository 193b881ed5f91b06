// Reading a signed CDN URL's expiry from its token (docs/service-behaviour.md#signed-url-expiry), and
// when a listing's copy of a deviation may stand in for /deviation/{id}.
import { describe, expect, it } from "vitest";
import type { Deviation } from "../../src/api/types.ts";
import { usableListing } from "../../src/downloads/renditions.ts";
import { isSignedUrlUsable, SIGNED_URL_MARGIN_MS, signedUrlExpiry } from "../../src/downloads/signed-url.ts";

const NOW = Date.parse("2026-11-02T09:00:00Z");
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
const token = (claims: Record<string, unknown>) => `${b64({ typ: "JWT", alg: "HS256" })}.${b64(claims)}.c2ln`;
const signed = (claims: Record<string, unknown>) => `https://cdn.example/f/a/file.jpg?token=${token(claims)}`;
const expiringIn = (s: number) => signed({ aud: ["urn:service:file.download"], iat: NOW / 1000, exp: NOW / 1000 + s });

describe(signedUrlExpiry.name, () => {
  it("reads exp (seconds) as milliseconds, no expiry without token or exp, and an unreadable token as unknown", () => {
    expect(signedUrlExpiry(expiringIn(600))).toBe(NOW + 600_000);
    expect(signedUrlExpiry("https://cdn.example/f/a/file.jpg")).toBeNull();
    expect(signedUrlExpiry(signed({ aud: ["urn:service:image.operations"] }))).toBeNull();
    expect(signedUrlExpiry("https://cdn.example/f.jpg?token=garbage")).toBeUndefined();
    expect(signedUrlExpiry("https://cdn.example/f.jpg?token=a.bm90IGpzb24.c")).toBeUndefined();
    expect(signedUrlExpiry(signed({ exp: "soon" }))).toBeUndefined();
    expect(signedUrlExpiry("not a url")).toBeUndefined();
  });
});

describe(isSignedUrlUsable.name, () => {
  it("takes a URL until the margin before its expiry, and one without a stated expiry as it is", () => {
    expect(isSignedUrlUsable(expiringIn(600), NOW)).toBe(true);
    expect(isSignedUrlUsable(expiringIn(SIGNED_URL_MARGIN_MS / 1000 + 1), NOW)).toBe(true);
    expect(isSignedUrlUsable(expiringIn(SIGNED_URL_MARGIN_MS / 1000), NOW)).toBe(false);
    expect(isSignedUrlUsable(expiringIn(-1), NOW)).toBe(false);
    expect(isSignedUrlUsable("https://cdn.example/f/a/file.jpg", NOW)).toBe(true);
    expect(isSignedUrlUsable("https://cdn.example/f.jpg?token=garbage", NOW)).toBe(false);
  });
});

describe(usableListing.name, () => {
  const listed = (fields: Record<string, unknown>) => ({ deviationid: "D1", is_deleted: false, ...fields }) as Deviation;
  const content = (src: string) => ({ content: { src, width: 1920, height: 1080, transparency: false } });

  it("serves while the best rendition's signature holds, and not once it is stale", () => {
    const fresh = listed(content(expiringIn(600)));
    expect(usableListing(fresh, NOW)).toBe(fresh);
    expect(usableListing(listed(content(expiringIn(30))), NOW)).toBeUndefined();
    // A URL that states no expiry may be from a listing read long ago: the service is asked.
    expect(usableListing(listed(content("https://cdn.example/f/a/file.jpg")), NOW)).toBeUndefined();
    expect(usableListing(listed(content(signed({ aud: ["urn:service:image.operations"] }))), NOW)).toBeUndefined();
    // The video is the best rendition: its URL decides, not the fullview's.
    const staleVideo = listed({ ...content(expiringIn(600)), videos: [{ src: expiringIn(-10), quality: "720p", filesize: 5 }] });
    expect(usableListing(staleVideo, NOW)).toBeUndefined();
  });

  it("asks the service when the listing shows nothing, a deleted work or a locked one (its view depends on the viewer)", () => {
    expect(usableListing(listed({}), NOW)).toBeUndefined();
    expect(usableListing(listed({ ...content(expiringIn(600)), is_deleted: true }), NOW)).toBeUndefined();
    expect(usableListing(listed({ ...content(expiringIn(600)), tier_access: "locked" }), NOW)).toBeUndefined();
    const premium = { type: "watchers", has_access: false, gallery_id: "G" };
    expect(usableListing(listed({ ...content(expiringIn(600)), premium_folder_data: premium }), NOW)).toBeUndefined();
  });

  it("takes a mature work's blurred rendition and a multi-image post's first image as listed: a fresh copy shows the same", () => {
    const blurred = listed(content(`https://cdn.example/v1/fill/w_150,h_150,blur_30/f.jpg?token=${token({ exp: NOW / 1000 + 600 })}`));
    expect(usableListing(blurred, NOW)).toBe(blurred);
    const multi = listed({ ...content(expiringIn(600)), is_multi_media: true });
    expect(usableListing(multi, NOW)).toBe(multi);
  });
});
