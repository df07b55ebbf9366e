import { ValidationError } from "../server/errors.js";

/**
 * A page boundary of the meetings list: the last meeting's start and bot id. Newer meetings sort
 * before it, so pages already read never shift when meetings arrive. Opaque to clients (base64url).
 */
export interface MeetingCursor {
  startedAt: string;
  id: number;
}

export function encodeCursor(cursor: MeetingCursor): string {
  return Buffer.from(JSON.stringify([cursor.startedAt, cursor.id])).toString("base64url");
}

export function decodeCursor(text: string): MeetingCursor {
  try {
    const [startedAt, id] = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as unknown[];
    if (typeof startedAt === "string" && !Number.isNaN(Date.parse(startedAt)) && Number.isSafeInteger(id)) {
      return { startedAt, id: id as number };
    }
  } catch {
    // refused below
  }
  throw new ValidationError([
    { loc: ["query", "cursor"], msg: "not a cursor this API gave", type: "value_error" },
  ]);
}
