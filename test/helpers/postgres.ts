import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import type { DatabaseOptions } from "../../src/server/db/database.js";

/**
 * PostgreSQL for tests. MEETBOT_TEST_DATABASE_URL (set by scripts/with-postgres.sh) is an admin
 * URL to a cluster; when it is set, every test server gets a database of its own in it, so tests
 * running in parallel never see each other's rows. Unset, tests use SQLite.
 */
export function testPostgresAdminUrl(): string | undefined {
  return process.env.MEETBOT_TEST_DATABASE_URL || undefined;
}

/** The database the tests in this process run on. */
export const testDialect: "sqlite" | "postgres" = testPostgresAdminUrl() ? "postgres" : "sqlite";

export interface TestDatabase {
  name: string;
  /** The URL a server connects with (DATABASE_URL). */
  url: string;
  /** Drops the database, closing whatever is still connected to it. */
  drop(): Promise<void>;
}

/**
 * The database `name` in the cluster behind `adminUrl`, created empty unless it exists already (a
 * test server restarted on the same data dir finds its data again). By default a fresh name.
 */
export async function openTestDatabase(adminUrl: string, name = newDatabaseName()): Promise<TestDatabase> {
  try {
    await admin(adminUrl, `CREATE DATABASE ${quoteIdent(name)}`);
  } catch (err) {
    if ((err as { code?: string }).code !== "42P04") throw err; // duplicate_database
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => admin(adminUrl, `DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`),
  };
}

/**
 * What a test server on `dataDir` stores its rows in: undefined for SQLite (in the data dir), or
 * with MEETBOT_TEST_DATABASE_URL the PostgreSQL database named after the data dir.
 */
export async function testDatabaseFor(dataDir: string): Promise<TestDatabase | undefined> {
  const adminUrl = testPostgresAdminUrl();
  if (!adminUrl) return undefined;
  const digest = createHash("sha256").update(path.resolve(dataDir)).digest("hex").slice(0, 16);
  return openTestDatabase(adminUrl, `meetbot_test_${digest}`);
}

export function newDatabaseName(): string {
  return `meetbot_test_${randomBytes(8).toString("hex")}`;
}

async function admin(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function quoteIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unexpected database name ${name}`);
  return `"${name}"`;
}

/**
 * A fresh, empty database of the suite's dialect (a temp SQLite file, or a new PostgreSQL
 * database), as the options a server would open it with. `dispose` removes it.
 */
export async function scratchDatabase(): Promise<{ options: DatabaseOptions; dispose(): Promise<void> }> {
  const adminUrl = testPostgresAdminUrl();
  if (adminUrl) {
    const database = await openTestDatabase(adminUrl);
    return { options: { kind: "postgres", url: database.url, poolSize: 5 }, dispose: database.drop };
  }
  const dir = await mkdtemp(path.join(tmpdir(), "meetbot-db-"));
  return {
    options: { kind: "sqlite", file: path.join(dir, "meetbot.sqlite") },
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}
