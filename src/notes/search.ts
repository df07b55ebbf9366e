import { type Expression, type ExpressionBuilder, type SqlBool, sql } from "kysely";
import type { Database, DialectName } from "../server/db/schema.js";
import { ValidationError } from "../server/errors.js";

/**
 * `q`: the meetings whose title or transcript holds every word of it, English-stemmed. SQLite
 * searches its FTS5 tables (migration 0009, kept in step by triggers), PostgreSQL its GIN indexes of
 * to_tsvector('english', …). Only the words of `q` are used (letters and digits): no query syntax
 * reaches either engine.
 */
export function matchesSearch(
  eb: ExpressionBuilder<Database, "bots">,
  dialect: DialectName,
  q: string,
): Expression<SqlBool> {
  const words = q.match(/[\p{L}\p{N}]+/gu) ?? [];
  if (words.length === 0) {
    throw new ValidationError([{ loc: ["query", "q"], msg: "must contain a word", type: "value_error" }]);
  }
  if (dialect === "sqlite") {
    const match = words.map((word) => `"${word}"`).join(" ");
    return eb.or([
      eb(
        "bots.id",
        "in",
        sql<number>`(select rowid from meeting_title_fts where meeting_title_fts match ${match})`,
      ),
      eb(
        "bots.id",
        "in",
        sql<number>`(select rowid from transcript_fts where transcript_fts match ${match})`,
      ),
    ]);
  }
  const query = sql`plainto_tsquery('english', ${words.join(" ")})`;
  return eb.or([
    sql<SqlBool>`to_tsvector('english', bots.meeting_title) @@ ${query}`,
    eb(
      "bots.id",
      "in",
      sql<number>`(select t.bot_id from transcripts t where to_tsvector('english', t.text) @@ ${query})`,
    ),
  ]);
}
