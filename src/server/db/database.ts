import SQLite from "better-sqlite3";
import { type Dialect, Kysely, SqliteDialect } from "kysely";
import { migrateToLatest } from "./migrations.js";
import type { Database } from "./schema.js";

export type DialectName = "sqlite" | "postgres";

/** Where the data lives. Only SQLite for now; a `{ kind: "postgres", url }` case slots in here. */
export type DatabaseOptions = { kind: "sqlite"; file: string };

export interface Db {
  kysely: Kysely<Database>;
  dialect: DialectName;
  close(): Promise<void>;
}

function createDialect(options: DatabaseOptions): { dialect: Dialect; name: DialectName } {
  switch (options.kind) {
    case "sqlite": {
      const database = new SQLite(options.file);
      database.pragma("journal_mode = WAL");
      database.pragma("foreign_keys = ON");
      database.pragma("busy_timeout = 5000");
      return { dialect: new SqliteDialect({ database }), name: "sqlite" };
    }
  }
}

/** Opens the database and brings its schema up to date. */
export async function openDatabase(options: DatabaseOptions): Promise<Db> {
  const { dialect, name } = createDialect(options);
  const kysely = new Kysely<Database>({ dialect });
  try {
    await migrateToLatest(kysely, name);
  } catch (err) {
    await kysely.destroy();
    throw err;
  }
  return { kysely, dialect: name, close: () => kysely.destroy() };
}

/** True for a unique / primary key violation on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "23505";
}

/** Timestamps are stored as ISO-8601 UTC text so that they sort as strings on every dialect. */
export function toIso(date: Date): string {
  return date.toISOString();
}

export function parseJson<T>(text: string): T;
export function parseJson<T>(text: string | null): T | null;
export function parseJson<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}
