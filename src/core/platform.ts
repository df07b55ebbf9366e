import { z } from "zod";

/** The spec's <P1>, <P2>, <P3>: URL based, meeting id + password based, tenant based. */
export const PLATFORMS = ["google", "zoom", "teams"] as const;
export const Platform = z.enum(PLATFORMS);
export type Platform = z.infer<typeof Platform>;

/** Hosts of the real platforms. Anything else must be allowed explicitly by the operator. */
export const PLATFORM_HOSTS: Record<Platform, readonly string[]> = {
  google: ["meet.google.com"],
  zoom: ["zoom.us", "app.zoom.us"],
  teams: ["teams.microsoft.com", "teams.live.com"],
};

const Url = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });

/**
 * MeetingInfo as in the spec. Which fields are required depends on the platform; the rules live
 * here so the server (on create) and the runner (on start) apply the same ones.
 */
export const MeetingInfo = z
  .object({
    platform: Platform,
    meetingUrl: Url.optional(),
    meetingId: z.string().min(1).max(200).optional(),
    meetingPassword: z.string().max(200).optional(),
    tenantId: z.string().min(1).max(200).optional(),
    organizerId: z.string().min(1).max(200).optional(),
  })
  .superRefine((info, ctx) => {
    const missing = (field: keyof typeof info, why: string) =>
      ctx.addIssue({ code: "custom", path: [field], message: why });
    if (info.platform === "google" && !info.meetingUrl) {
      missing("meetingUrl", "meetingUrl is required for platform google");
    }
    if (info.platform === "zoom" && !info.meetingId && !info.meetingUrl) {
      missing("meetingId", "meetingId (or a meetingUrl) is required for platform zoom");
    }
    if (info.platform === "teams" && !info.meetingUrl) {
      for (const field of ["meetingId", "tenantId", "organizerId"] as const) {
        if (!info[field]) missing(field, `${field} (or a meetingUrl) is required for platform teams`);
      }
    }
  });
export type MeetingInfo = z.infer<typeof MeetingInfo>;

/** True when `host` is one of the platform's real hosts (or a subdomain of one). */
export function isPlatformHost(platform: Platform, host: string): boolean {
  const lower = host.toLowerCase();
  return PLATFORM_HOSTS[platform].some((known) => lower === known || lower.endsWith(`.${known}`));
}
