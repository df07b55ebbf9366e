import { z } from "zod";

/** Shapes shared by every route group. */

export const Timestamp = z.iso.datetime().describe("ISO 8601, UTC");
export const HttpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });

export const Detail = z.object({ detail: z.string() });
