/** Meetings on the mock platforms, with ids in each platform's own format. */

export type PlatformName = "google" | "zoom" | "teams";

export interface MockMeeting {
  /** The meeting's id as the mock's control API knows it (a Meet code, a Zoom number, a Teams id). */
  id: string;
  meetingInfo: Record<string, unknown>;
}

const LETTERS = 26;

/**
 * Meeting `n` (0 or more) of a test file's `family` (three lowercase letters, one per file so that
 * files sharing a mock never share a meeting) on the mock of `platform`:
 * Meet `fam-meet-abc`, Zoom `8` + the family as digits + `n` (11 digits), Teams `fammeeting0001`.
 */
export function mockMeeting(mockUrl: string, platform: PlatformName, family: string, n: number): MockMeeting {
  if (!/^[a-z]{3}$/.test(family))
    throw new Error(`a meeting family is three lowercase letters, not ${family}`);
  switch (platform) {
    case "google": {
      const letter = (k: number) => String.fromCharCode(97 + (Math.floor(n / LETTERS ** k) % LETTERS));
      const id = `${family}-meet-${letter(2)}${letter(1)}${letter(0)}`;
      return { id, meetingInfo: { platform, meetingUrl: `${mockUrl}/meet/${id}` } };
    }
    case "zoom": {
      const digits = [...family].map((c) => String(c.charCodeAt(0) - 97).padStart(2, "0")).join("");
      const id = `8${digits}${String(n).padStart(4, "0")}`;
      return { id, meetingInfo: { platform, meetingId: id } };
    }
    case "teams": {
      const id = `${family}meeting${String(n).padStart(4, "0")}`;
      return {
        id,
        meetingInfo: { platform, meetingId: id, tenantId: `${family}-tenant`, organizerId: `${family}-org` },
      };
    }
  }
}
