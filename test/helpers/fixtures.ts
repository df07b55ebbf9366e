import type { Selectable } from "kysely";
import { expect, test as base } from "vitest";
import type { Db } from "../../src/server/db/database.js";
import type { Database } from "../../src/server/db/schema.js";
import type { StartServerOptions } from "../../src/server/main.js";
import {
  deployedBot,
  type FakeRunner,
  mp4Bytes,
  openServerDatabase,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
} from "./server-harness.js";

/**
 * The fixture of an integration test file: "a server, a user, a database, a recording".
 *
 * - `server`: one per file (file scope), on the database the run selects (SQLite, or PostgreSQL
 *   under scripts/with-postgres.sh). Starting one is the slow part of a test; files share nothing,
 *   so one per file keeps them independent and still cheap.
 * - `serverOptions`: what that server is started with; a file whose server needs a config knob
 *   sets it once at its top: `test.override("serverOptions", { rateLimit: ... })`.
 * - `db`: a second connection to that server's own database (file scope), to read the rows behind
 *   the API (`readRow`).
 * - `user`: a fresh registered user per test, so that a test asserting on a list (bots,
 *   recordings, webhooks) sees only what it made itself, whatever ran before it in the file.
 * - `recording`: `user`'s bot that went through a call and uploaded a recording (DONE); made only
 *   for the tests that name it.
 *
 * Suite hooks (beforeAll) get only the file-scoped ones: `server`, `db`, `serverOptions`.
 */
function integrationTest() {
  return base
    .extend("serverOptions", { scope: "file" }, {} as Partial<StartServerOptions>)
    .extend("server", { scope: "file" }, async ({ serverOptions }, { onCleanup }) => {
      const server = await startTestServer(serverOptions);
      onCleanup(() => server.close());
      return server;
    })
    .extend("db", { scope: "file" }, async ({ server }, { onCleanup }) => {
      const db = await openServerDatabase(server);
      onCleanup(() => db.close());
      return db;
    })
    .extend("user", async ({ server }) => registerUser(server.api))
    .extend("recording", async ({ server, user }) => recordedBot(server, user));
}

/**
 * The fixture's test function. `let`, and renewed before every file (test/helpers/each-file.ts):
 * a file's top-level `test.override` replaces the fixture's defaults on this very object, and
 * when files share a worker's modules (`--no-isolate`) the next file would inherit them.
 */
export let test = integrationTest();

declare global {
  /** Set once this module is loaded: renews `test` for the next file. */
  var renewIntegrationTest: (() => void) | undefined;
}
globalThis.renewIntegrationTest = () => {
  test = integrationTest();
};

export { expect };

export interface RecordedBot {
  botId: number;
  runner: FakeRunner;
}

/**
 * A bot of `owner` that went through a call and uploaded `bytes` (an MP4 header and noise by
 * default) as its recording; DONE unless `done: false` (then it stays CALL_ENDED, recording kept).
 */
export async function recordedBot(
  server: TestServer,
  owner: TestUser,
  opts: {
    bytes?: Uint8Array;
    title?: string;
    durationMs?: number;
    done?: boolean;
    body?: Record<string, unknown>;
  } = {},
): Promise<RecordedBot> {
  const { botId, runner } = await deployedBot(server, owner, {
    meetingTitle: opts.title ?? "Standup",
    ...opts.body,
  });
  for (const status of ["JOINING_CALL", "IN_CALL"] as const) {
    const sent = await runner.status(status);
    if (sent.status !== 200) throw new Error(`${status} answered ${sent.status}`);
  }
  const ended = await runner.status("CALL_ENDED", { subCode: "MEETING_ENDED" });
  if (ended.status !== 200) throw new Error(`CALL_ENDED answered ${ended.status}`);
  const upload = await runner.upload(opts.bytes ?? mp4Bytes(1000), opts.durationMs ?? 2000);
  if (upload.status !== 201)
    throw new Error(`upload answered ${upload.status} ${JSON.stringify(upload.body)}`);
  if (opts.done !== false) {
    const done = await runner.status("DONE");
    if (done.status !== 200) throw new Error(`DONE answered ${done.status}`);
  }
  return { botId, runner };
}

/** The tables of the server's database, by name. */
export type TableName = keyof Database & string;
/** A row of `table` as a select returns it. */
export type Row<T extends TableName> = Selectable<Database[T]>;

/**
 * The one row of `table` whose `column` (id by default) is `value`, read behind the API; undefined
 * when there is none. For asserting on what the API does not show (a secret stored hashed, a row
 * left behind).
 */
export async function readRow<T extends TableName>(
  db: Db,
  table: T,
  value: string | number,
  column = "id",
): Promise<Row<T> | undefined> {
  // Kysely cannot type a table and column chosen at run time; the row type comes from `table`.
  const rows = await db.kysely
    .selectFrom(table as "bots")
    .selectAll()
    .where(column as "id", "=", value as number)
    .execute();
  if (rows.length > 1) throw new Error(`${rows.length} rows of ${table} have ${column} = ${value}`);
  return rows[0] as Row<T> | undefined;
}
