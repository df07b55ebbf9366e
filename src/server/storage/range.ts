export type ByteRange = { start: number; end: number };

/**
 * Parses a single-range `Range: bytes=...` header against a file of `size` bytes.
 * Returns the inclusive range, "unsatisfiable" (answer 416), or null to serve the whole file
 * (no header, another unit, several ranges, or a malformed header, which RFC 9110 lets us ignore).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | "unsatisfiable" | null {
  if (!header) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return null;
  const [, from = "", to = ""] = match;
  if (from === "" && to === "") return null;
  if (from === "") {
    const suffix = Number(to);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(from);
  const end = to === "" ? size - 1 : Math.min(Number(to), size - 1);
  if (to !== "" && Number(to) < start) return null;
  if (start >= size) return "unsatisfiable";
  return { start, end };
}
