import { afterAll, beforeAll, expect, it } from "vitest";
import { type DatabaseOptions, type Db, openDatabase } from "../../src/server/db/database.js";
import { preparedQuery } from "../../src/server/db/prepared.js";
import { scratchDatabase } from "../helpers/postgres.js";

/** Runs on the suite's database: SQLite, and PostgreSQL under scripts/with-postgres.sh. */

let scratch: { options: DatabaseOptions; dispose(): Promise<void> };
let db: Db;
const now = new Date().toISOString();
beforeAll(async () => {
  scratch = await scratchDatabase();
  db = await openDatabase(scratch.options);
  await db.kysely
    .insertInto("users")
    .values(
      ["ann", "bob", "cyd"].map((name) => ({
        email: `${name}@example.com`,
        name,
        password_hash: "x",
        created_at: now,
      })),
    )
    .execute();
});
afterAll(async () => {
  await db?.close();
  await scratch?.dispose();
});

const userByEmail = preparedQuery((d, email: string) =>
  d.selectFrom("users").select(["name"]).where("email", "=", email),
);

it("runs each call with that call's arguments, not the first call's", async () => {
  expect(await userByEmail(db.kysely, "ann@example.com")).toEqual([{ name: "ann" }]);
  expect(await userByEmail(db.kysely, "bob@example.com")).toEqual([{ name: "bob" }]);
  expect(await userByEmail(db.kysely, "nobody@example.com")).toEqual([]);
});

it("keeps the query's own constants and fills an argument used twice in every place", async () => {
  const renameUnlessCyd = preparedQuery((d, email: string, name: string) =>
    d
      .updateTable("users")
      .set({ name, password_hash: name })
      .where("email", "=", email)
      .where("name", "!=", "cyd")
      .returning(["name", "password_hash"]),
  );
  expect(await renameUnlessCyd(db.kysely, "ann@example.com", "anne")).toEqual([
    { name: "anne", password_hash: "anne" },
  ]);
  expect(await renameUnlessCyd(db.kysely, "cyd@example.com", "cydney")).toEqual([]);
  expect(await userByEmail(db.kysely, "cyd@example.com")).toEqual([{ name: "cyd" }]);
});

it("runs inside a transaction, which sees its own uncommitted rows", async () => {
  const seen = await db.kysely.transaction().execute(async (trx) => {
    await trx
      .insertInto("users")
      .values({ email: "dee@example.com", name: "dee", password_hash: "x", created_at: now })
      .execute();
    return userByEmail(trx, "dee@example.com");
  });
  expect(seen).toEqual([{ name: "dee" }]);
});

it("refuses a query that branches on an argument instead of taking it as a parameter", async () => {
  const branching = preparedQuery((d, email: string) =>
    d
      .selectFrom("users")
      .select("name")
      .$if(email === "ann@example.com", (qb) => qb.where("email", "=", "ann@example.com")),
  );
  await expect(branching(db.kysely, "ann@example.com")).rejects.toThrow(/argument 0 is not a parameter/);
});
