import { chmodSync, closeSync, existsSync, openSync } from "node:fs";
import SQLite from "better-sqlite3";
import { type Dialect, Kysely, PostgresDialect, type SqliteDatabase, SqliteDialect } from "kysely";
import pg from "pg";
import { StartupError } from "../startup-error.js";
import { migrateToLatest } from "./migrations.js";
import type { Database, DialectName } from "./schema.js";

export type { DialectName } from "./schema.js";

/** Where the data lives: a SQLite file (the default) or a PostgreSQL database (DATABASE_URL). */
export type DatabaseOptions =
  | { kind: "sqlite"; file: string }
  | { kind: "postgres"; url: string; /** Most connections open at once. */ poolSize: number };

export interface Db {
  kysely: Kysely<Database>;
  dialect: DialectName;
  close(): Promise<void>;
}

/**
 * The largest value of an `integer` column (ids, seq, durations) on PostgreSQL; SQLite's are 64-bit.
 * A bound for input that ends up compared with or stored in one: beyond it PostgreSQL errors.
 */
export const MAX_INTEGER_COLUMN = 2_147_483_647;

/** How long a new PostgreSQL connection may take before the query that wanted it fails. */
const CONNECT_TIMEOUT_MS = 10_000;

// pg type oids (pg_type.oid) whose default parse is a string.
const INT8_OID = 20;
const NUMERIC_OID = 1700;

/**
 * pg returns bigint (COUNT(*), SUM of integers, size_bytes) and numeric (AVG) as strings, to keep
 * every digit; SQLite returns numbers. Services are written once, so both answer numbers here.
 * Our values (counts, byte sizes, averages) stay far below 2^53, where a number is exact.
 * These parsers belong to our pool only; pg's process-wide defaults are left alone.
 */
const numericTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if ((format ?? "text") === "text" && (oid === INT8_OID || oid === NUMERIC_OID)) {
      return (value: string) => Number(value);
    }
    return pg.types.getTypeParser(oid, format);
  }) as pg.CustomTypesConfig["getTypeParser"],
};

/**
 * The database file is readable by its owner only (0600), created so or made so. SQLite gives
 * the WAL and shared-memory files it creates beside it the database file's own mode.
 */
function ownerOnly(file: string): void {
  closeSync(openSync(file, "a", 0o600));
  for (const name of [file, `${file}-wal`, `${file}-shm`]) {
    if (existsSync(name)) chmodSync(name, 0o600);
  }
}

/** Opens the database, checks that it answers, and brings its schema up to date. */
export async function openDatabase(options: DatabaseOptions): Promise<Db> {
  const { dialect, name } =
    options.kind === "sqlite" ? openSqlite(options.file) : await openPostgres(options.url, options.poolSize);
  const kysely = new Kysely<Database>({ dialect });
  try {
    await migrateToLatest(kysely, name);
  } catch (err) {
    await kysely.destroy();
    throw err;
  }
  return { kysely, dialect: name, close: () => kysely.destroy() };
}

function openSqlite(file: string): { dialect: Dialect; name: DialectName } {
  let database: SQLite.Database;
  try {
    ownerOnly(file);
    database = new SQLite(file);
  } catch (err) {
    throw new StartupError(`cannot open the SQLite database ${file}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  database.pragma("journal_mode = WAL");
  database.pragma("foreign_keys = ON");
  database.pragma("busy_timeout = 5000");
  return { dialect: new SqliteDialect({ database: withStatementCache(database) }), name: "sqlite" };
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew; preparing costs more than running a small query (a fifth of
 * an authenticated GET's CPU, measured). The queries are a fixed set of shapes, so each SQL text is
 * prepared once and its statement reused. Safe: one connection, and Kysely runs one query at a time
 * on it.
 */
function withStatementCache(database: SQLite.Database): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>();
  return {
    close: () => database.close(),
    prepare(sql: string) {
      let statement = statements.get(sql);
      if (!statement) {
        statement = database.prepare(sql);
        if (statements.size >= STATEMENT_CACHE_SIZE) {
          statements.delete(statements.keys().next().value as string);
        }
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

async function openPostgres(url: string, poolSize: number): Promise<{ dialect: Dialect; name: DialectName }> {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    types: numericTypes,
  });
  // An idle connection the server dropped (restart, network) would otherwise crash the process
  // as an unhandled 'error' event; the pool discards it and the next query reconnects.
  pool.on("error", (err) => process.emitWarning(`PostgreSQL connection lost: ${err.message}`));
  try {
    await pool.query("SELECT 1");
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw new StartupError(`cannot connect to PostgreSQL at ${describeUrl(url)}: ${reason(err)}`, {
      cause: err,
    });
  }
  return { dialect: new PostgresDialect({ pool }), name: "postgres" };
}

/** host:port/database of a connection URL: what to show in an error, never the password. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || "localhost"}:${u.port || "5432"}${u.pathname.length > 1 ? u.pathname : "/"}`;
  } catch {
    return "(unparsable DATABASE_URL)";
  }
}

function reason(err: unknown): string {
  // A refused connection to "localhost" is an AggregateError (one error per address tried).
  if (err instanceof AggregateError && err.errors.length > 0) return reason(err.errors[0]);
  const message = err instanceof Error ? err.message : String(err);
  return message || (err as { code?: string }).code || "unknown error";
}

/** True for a unique / primary key violation on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "23505";
}

/**
 * True when PostgreSQL refused a value that SQLite would have stored: SQLSTATE class 22, data
 * exception (a NUL character in text, an integer past 32 bits, a string longer than its column).
 * Input that reached the database unchecked: a 4xx for the client, not a server fault.
 */
export function isInvalidValue(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^22[0-9A-Z]{3}$/.test(code);
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
