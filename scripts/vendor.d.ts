// Types of scripts/vendor.js for the tests that import it.
export const VENDORED: readonly string[];
export function pointAtVendor(source: string, file: string, vendorDir: string): string;
export function vendorPackages(
  root: string,
  dist: string,
  options?: { loadEsbuild?: () => Promise<{ build(options: object): Promise<unknown> }> },
): Promise<{ vendored: true } | { vendored: false; reason: string }>;
