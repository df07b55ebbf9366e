import { z } from "zod";
import { Timestamp } from "./common.js";

export const DownloadLink = z.object({ url: z.url(), expiresAt: Timestamp });
export type DownloadLink = z.infer<typeof DownloadLink>;
