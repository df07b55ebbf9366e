import type { Compilable, CompiledQuery, Kysely } from "kysely";
import type { Database } from "./schema.js";

const ARGUMENT = Symbol("prepared query argument");
interface Placeholder {
  readonly [ARGUMENT]: number;
}

const isPlaceholder = (value: unknown): value is Placeholder =>
  typeof value === "object" && value !== null && ARGUMENT in value;

interface Template {
  compiled: CompiledQuery;
  /** For each parameter of the compiled SQL: the index of the argument it takes, or -1 (a constant). */
  sources: number[];
}

/** The query run with each call's arguments; resolves to its rows. */
export type PreparedQuery<Args extends readonly unknown[], Row> = (
  db: Kysely<Database>,
  ...args: Args
) => Promise<Row[]>;

/**
 * A query that Kysely builds and compiles once per database, then runs with each call's
 * arguments. Kysely builds and compiles on every execution, and in a busy server that costs more
 * than SQLite takes to answer a primary-key lookup (GET /v1/bots/{id}: ~20 µs building vs ~7 µs
 * in SQLite, measured), so the hot paths use this; everything else builds queries as usual.
 *
 * `build` is called once, with placeholders in place of the arguments: it must use each one as a
 * plain value (compared, inserted) and must not branch on it or put it in a list.
 */
export function preparedQuery<Args extends readonly unknown[], Row>(
  build: (db: Kysely<Database>, ...args: Args) => Compilable<Row>,
): PreparedQuery<Args, Row> {
  // Keyed by the dialect's adapter: one per database, shared by its transactions.
  const templates = new WeakMap<object, Template>();
  return async (db, ...args) => {
    const adapter = db.getExecutor().adapter;
    let template = templates.get(adapter);
    if (!template) {
      template = compileTemplate(db, build, args.length);
      templates.set(adapter, template);
    }
    const { compiled, sources } = template;
    const parameters = sources.map((source, i) => (source === -1 ? compiled.parameters[i] : args[source]));
    const result = await db.executeQuery<Row>({ ...compiled, parameters } as CompiledQuery<Row>);
    return result.rows;
  };
}

function compileTemplate<Args extends readonly unknown[], Row>(
  db: Kysely<Database>,
  build: (db: Kysely<Database>, ...args: Args) => Compilable<Row>,
  arity: number,
): Template {
  const placeholders = Array.from({ length: arity }, (_, i): Placeholder => ({ [ARGUMENT]: i }));
  const compiled = build(db, ...(placeholders as unknown as Args)).compile();
  const sources = compiled.parameters.map((p) => (isPlaceholder(p) ? p[ARGUMENT] : -1));
  for (let i = 0; i < arity; i++) {
    // An argument the SQL does not take was branched on or inlined: every call would run the first one's query.
    if (!sources.includes(i))
      throw new Error(`preparedQuery: argument ${i} is not a parameter of: ${compiled.sql}`);
  }
  return { compiled, sources };
}
