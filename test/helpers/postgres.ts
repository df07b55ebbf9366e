import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { type DatabaseOptions, openDatabase } from "../../src/server/db/database.js";

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
 * The database `name` in the cluster behind `adminUrl`, created unless it exists already (a test
 * server restarted on the same data dir finds its data again): empty, or a copy of `template`.
 * By default a fresh name.
 */
export async function openTestDatabase(
  adminUrl: string,
  name = newDatabaseName(),
  template?: string,
): Promise<TestDatabase> {
  const copy = template === undefined ? "" : ` TEMPLATE ${quoteIdent(template)}`;
  try {
    await admin(adminUrl, `CREATE DATABASE ${quoteIdent(name)}${copy}`);
  } catch (err) {
    if ((err as { code?: string }).code !== "42P04") throw err; // duplicate_database
  }
  return {
    name,
    url: databaseUrl(adminUrl, name),
    drop: () => admin(adminUrl, `DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`),
  };
}

/**
 * What a test server on `dataDir` stores its rows in: undefined for SQLite (in the data dir), or
 * with MEETBOT_TEST_DATABASE_URL the PostgreSQL database named after the data dir, a copy of the
 * migrated template (the server finds its schema up to date, as after any restart).
 */
export async function testDatabaseFor(dataDir: string): Promise<TestDatabase | undefined> {
  const adminUrl = testPostgresAdminUrl();
  if (!adminUrl) return undefined;
  const digest = createHash("sha256").update(path.resolve(dataDir)).digest("hex").slice(0, 16);
  return openTestDatabase(adminUrl, `meetbot_test_${digest}`, await migratedTemplate(adminUrl));
}

let template: Promise<string> | undefined;

/**
 * A database with every migration applied, made once per cluster and schema: the test servers'
 * databases are copied from it instead of each being migrated (the PostgreSQL run starts ~195
 * servers: 530 → 504 core-seconds, 271 → 259 s, measured). The name carries
 * a digest of the migrations, so a changed schema gets a template of its own in a long-lived
 * cluster. Workers that start together take turns through an advisory lock; the template is built
 * under another name and renamed, so nobody copies a half-migrated one.
 */
function migratedTemplate(adminUrl: string): Promise<string> {
  template ??= (async () => {
    const migrations = await readFile(new URL("../../src/server/db/migrations.ts", import.meta.url));
    const name = `meetbot_template_${createHash("sha256").update(migrations).digest("hex").slice(0, 16)}`;
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query("SELECT pg_advisory_lock($1)", [TEMPLATE_LOCK]);
      const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
      if (found.rowCount === 0) {
        const building = `${name}_building`;
        await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(building)} WITH (FORCE)`);
        await client.query(`CREATE DATABASE ${quoteIdent(building)}`);
        const db = await openDatabase({
          kind: "postgres",
          url: databaseUrl(adminUrl, building),
          poolSize: 1,
        });
        await db.close();
        await client.query(`ALTER DATABASE ${quoteIdent(building)} RENAME TO ${quoteIdent(name)}`);
      }
    } finally {
      // Ending the session releases the lock.
      await client.end();
    }
    return name;
  })();
  return template;
}

/** The advisory lock key the template's builders share (any constant the tests use for nothing else). */
const TEMPLATE_LOCK = 7_240_501;

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
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
