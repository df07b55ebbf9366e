import { type CreateTableBuilder, type Kysely, type Migration, Migrator, sql } from "kysely";
import { StartupError } from "../startup-error.js";
import type { DialectName } from "./schema.js";

/**
 * Migrations live in code (no files to ship or find at runtime) and use only portable SQL.
 * The one dialect difference is the autoincrement id column, chosen by `dialect`.
 * Append new migrations; never edit one that has shipped.
 */
export function migrations(dialect: DialectName): Record<string, Migration> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations run against a schema that is still changing
  const id = <T extends string>(table: CreateTableBuilder<T, any>) =>
    dialect === "sqlite"
      ? table.addColumn("id", "integer", (col) => col.primaryKey().autoIncrement())
      : table.addColumn("id", "serial", (col) => col.primaryKey());

  return {
    "0001_initial": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        await id(db.schema.createTable("users"))
          .addColumn("email", "varchar(320)", (col) => col.notNull().unique())
          .addColumn("name", "varchar(200)", (col) => col.notNull())
          .addColumn("password_hash", "varchar(200)", (col) => col.notNull())
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .execute();

        await id(db.schema.createTable("bots"))
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("bot_display_name", "varchar(100)", (col) => col.notNull())
          .addColumn("meeting_title", "varchar(300)", (col) => col.notNull())
          .addColumn("status", "varchar(32)", (col) => col.notNull())
          .addColumn("platform", "varchar(32)", (col) => col.notNull())
          .addColumn("meeting_info", "text", (col) => col.notNull())
          .addColumn("callback_url", "text")
          .addColumn("heartbeat_interval", "integer", (col) => col.notNull())
          .addColumn("automatic_leave", "text", (col) => col.notNull())
          .addColumn("callback_token_hash", "varchar(64)")
          .addColumn("deployment_error", "text")
          .addColumn("last_heartbeat", "varchar(40)")
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .addColumn("updated_at", "varchar(40)", (col) => col.notNull())
          .execute();
        await db.schema.createIndex("bots_user_id_idx").on("bots").columns(["user_id", "id"]).execute();

        for (const table of ["bot_events", "aggregated_events"]) {
          await id(db.schema.createTable(table))
            .addColumn("bot_id", "integer", (col) => col.notNull().references("bots.id").onDelete("cascade"))
            .addColumn("event_type", "varchar(64)", (col) => col.notNull())
            .addColumn("event_time", "varchar(40)", (col) => col.notNull())
            .addColumn("data", "text", (col) => col.notNull())
            .addColumn("created_at", "varchar(40)", (col) => col.notNull())
            .execute();
          await db.schema.createIndex(`${table}_bot_id_idx`).on(table).columns(["bot_id", "id"]).execute();
        }

        await id(db.schema.createTable("bot_logs"))
          .addColumn("bot_id", "integer", (col) => col.notNull().references("bots.id").onDelete("cascade"))
          .addColumn("level", "varchar(16)", (col) => col.notNull())
          .addColumn("message", "text", (col) => col.notNull())
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .execute();
        await db.schema.createIndex("bot_logs_bot_id_idx").on("bot_logs").columns(["bot_id", "id"]).execute();

        await db.schema
          .createTable("callback_receipts")
          .addColumn("bot_id", "integer", (col) => col.notNull().references("bots.id").onDelete("cascade"))
          .addColumn("seq", "integer", (col) => col.notNull())
          .addColumn("event_type", "varchar(64)", (col) => col.notNull())
          .addColumn("received_at", "varchar(40)", (col) => col.notNull())
          .addPrimaryKeyConstraint("callback_receipts_pk", ["bot_id", "seq"])
          .execute();

        await db.schema
          .createTable("recordings")
          .addColumn("bot_id", "integer", (col) => col.primaryKey().references("bots.id").onDelete("cascade"))
          .addColumn("format", "varchar(16)", (col) => col.notNull())
          .addColumn("size_bytes", "bigint", (col) => col.notNull())
          .addColumn("duration_ms", "integer", (col) => col.notNull())
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .execute();
      },
    },
    "0002_speaker_timeline": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // The instant that is 0 s in the bot's recording, as the runner reported it.
        await db.schema.alterTable("bots").addColumn("recording_started_at", "varchar(40)").execute();
        await id(db.schema.createTable("speaker_changes"))
          .addColumn("bot_id", "integer", (col) => col.notNull().references("bots.id").onDelete("cascade"))
          .addColumn("change", "varchar(16)", (col) => col.notNull())
          .addColumn("participant_id", "varchar(200)", (col) => col.notNull())
          .addColumn("participant_name", "varchar(300)", (col) => col.notNull())
          .addColumn("event_time", "varchar(40)", (col) => col.notNull())
          .execute();
        await db.schema
          .createIndex("speaker_changes_bot_id_idx")
          .on("speaker_changes")
          .columns(["bot_id", "id"])
          .execute();
      },
    },
    "0003_credentials_and_request_logs": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        await id(db.schema.createTable("api_keys"))
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("name", "varchar(200)", (col) => col.notNull())
          .addColumn("key_hash", "varchar(64)", (col) => col.notNull().unique())
          .addColumn("key_preview", "varchar(40)", (col) => col.notNull())
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .addColumn("expires_at", "varchar(40)")
          .addColumn("revoked_at", "varchar(40)")
          .addColumn("last_used_at", "varchar(40)")
          .execute();
        await db.schema
          .createIndex("api_keys_user_id_idx")
          .on("api_keys")
          .columns(["user_id", "id"])
          .execute();

        // One row per authenticated API request: GET /users/me/api-logs, API key usage, analytics.
        await id(db.schema.createTable("api_request_logs"))
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("api_key_id", "integer", (col) => col.references("api_keys.id").onDelete("set null"))
          .addColumn("credential_kind", "varchar(16)", (col) => col.notNull())
          .addColumn("method", "varchar(10)", (col) => col.notNull())
          .addColumn("path", "text", (col) => col.notNull())
          .addColumn("route", "varchar(200)", (col) => col.notNull())
          .addColumn("status_code", "integer", (col) => col.notNull())
          .addColumn("latency_ms", "real", (col) => col.notNull())
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .execute();
        await db.schema
          .createIndex("api_request_logs_user_idx")
          .on("api_request_logs")
          .columns(["user_id", "id"])
          .execute();
        await db.schema
          .createIndex("api_request_logs_key_idx")
          .on("api_request_logs")
          .columns(["api_key_id", "created_at"])
          .execute();

        // A user signed in through an OpenID provider: (provider, subject) is the stable identity.
        await id(db.schema.createTable("user_identities"))
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("provider", "varchar(32)", (col) => col.notNull())
          .addColumn("subject", "varchar(255)", (col) => col.notNull())
          .addColumn("email", "varchar(320)")
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .addUniqueConstraint("user_identities_provider_subject", ["provider", "subject"])
          .execute();
      },
    },
    "0004_webhooks": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        await id(db.schema.createTable("webhooks"))
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("name", "varchar(200)", (col) => col.notNull())
          .addColumn("url", "text", (col) => col.notNull())
          .addColumn("events", "text", (col) => col.notNull())
          .addColumn("secret", "varchar(100)", (col) => col.notNull())
          .addColumn("is_active", "integer", (col) => col.notNull())
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .addColumn("updated_at", "varchar(40)", (col) => col.notNull())
          .execute();
        await db.schema
          .createIndex("webhooks_user_id_idx")
          .on("webhooks")
          .columns(["user_id", "id"])
          .execute();

        await db.schema
          .createTable("webhook_signing_secrets")
          .addColumn("user_id", "integer", (col) =>
            col.primaryKey().references("users.id").onDelete("cascade"),
          )
          .addColumn("secret", "varchar(100)", (col) => col.notNull())
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .execute();

        // The outbox. bot_id is no foreign key: deliveries outlive a deleted bot.
        await id(db.schema.createTable("webhook_deliveries"))
          .addColumn("public_id", "varchar(40)", (col) => col.notNull().unique())
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("webhook_id", "integer", (col) => col.references("webhooks.id").onDelete("cascade"))
          .addColumn("bot_id", "integer")
          .addColumn("target_url", "text")
          .addColumn("endpoint_key", "varchar(80)", (col) => col.notNull())
          .addColumn("event", "varchar(64)", (col) => col.notNull())
          .addColumn("payload", "text", (col) => col.notNull())
          .addColumn("state", "varchar(16)", (col) => col.notNull())
          .addColumn("attempts", "integer", (col) => col.notNull())
          .addColumn("round_failures", "integer", (col) => col.notNull())
          .addColumn("next_attempt_at", "varchar(40)")
          .addColumn("lease_until", "varchar(40)")
          .addColumn("claim_token", "varchar(40)")
          .addColumn("last_attempt_at", "varchar(40)")
          .addColumn("last_status_code", "integer")
          .addColumn("last_error", "varchar(32)")
          .addColumn("last_error_message", "text")
          .addColumn("last_response_time_ms", "integer")
          .addColumn("last_response_body", "text")
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .execute();
        // The worker's claim: due rows by state, then per endpoint in id order.
        await db.schema
          .createIndex("webhook_deliveries_due_idx")
          .on("webhook_deliveries")
          .columns(["state", "next_attempt_at"])
          .execute();
        await db.schema
          .createIndex("webhook_deliveries_endpoint_idx")
          .on("webhook_deliveries")
          .columns(["endpoint_key", "state", "id"])
          .execute();
        await db.schema
          .createIndex("webhook_deliveries_webhook_idx")
          .on("webhook_deliveries")
          .columns(["webhook_id", "id"])
          .execute();
        await db.schema
          .createIndex("webhook_deliveries_user_idx")
          .on("webhook_deliveries")
          .columns(["user_id", "id"])
          .execute();

        await id(db.schema.createTable("webhook_delivery_attempts"))
          .addColumn("delivery_id", "integer", (col) =>
            col.notNull().references("webhook_deliveries.id").onDelete("cascade"),
          )
          .addColumn("webhook_id", "integer")
          .addColumn("attempt", "integer", (col) => col.notNull())
          .addColumn("attempted_at", "varchar(40)", (col) => col.notNull())
          .addColumn("succeeded", "integer", (col) => col.notNull())
          .addColumn("status_code", "integer")
          .addColumn("error", "varchar(32)")
          .addColumn("error_message", "text")
          .addColumn("response_time_ms", "integer", (col) => col.notNull())
          .addColumn("response_body", "text")
          .execute();
        await db.schema
          .createIndex("webhook_delivery_attempts_delivery_idx")
          .on("webhook_delivery_attempts")
          .columns(["delivery_id", "id"])
          .execute();
        await db.schema
          .createIndex("webhook_delivery_attempts_webhook_idx")
          .on("webhook_delivery_attempts")
          .columns(["webhook_id", "id"])
          .execute();
      },
    },
    "0005_callback_token_expiry": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // When the bot's callback token stops working (null: while the bot runs).
        await db.schema.alterTable("bots").addColumn("callback_token_expires_at", "varchar(40)").execute();
        // A server-ended bot's bot.ended webhook, held until its runner is done (outbox.ts).
        await db.schema.alterTable("bots").addColumn("held_bot_ended", "text").execute();
      },
    },
    "0006_recording_shares": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // One public link per recording, gone with it. Only the token's sha256 is kept.
        await db.schema
          .createTable("recording_shares")
          .addColumn("bot_id", "integer", (col) =>
            col.primaryKey().references("recordings.bot_id").onDelete("cascade"),
          )
          .addColumn("token_hash", "varchar(64)", (col) => col.notNull().unique())
          .addColumn("expires_at", "varchar(40)", (col) => col.notNull())
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .execute();
      },
    },
    "0007_content_jobs": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // JSON of the bot's `transcription` and `summary` create options; null: none asked for.
        await db.schema.alterTable("bots").addColumn("content_options", "text").execute();

        // One row per (recording, kind): where its transcript or summary stands, and the lease of
        // the worker making it. Gone with the recording.
        await id(db.schema.createTable("content_jobs"))
          .addColumn("bot_id", "integer", (col) =>
            col.notNull().references("recordings.bot_id").onDelete("cascade"),
          )
          .addColumn("kind", "varchar(16)", (col) => col.notNull())
          .addColumn("state", "varchar(16)", (col) => col.notNull())
          .addColumn("engine", "varchar(32)", (col) => col.notNull())
          .addColumn("language", "varchar(32)")
          .addColumn("model", "varchar(200)")
          .addColumn("attempts", "integer", (col) => col.notNull())
          .addColumn("next_attempt_at", "varchar(40)")
          .addColumn("lease_until", "varchar(40)")
          .addColumn("claim_token", "varchar(40)")
          .addColumn("progress", "double precision")
          .addColumn("error_code", "varchar(64)")
          .addColumn("error_message", "text")
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .addColumn("updated_at", "varchar(40)", (col) => col.notNull())
          .addColumn("completed_at", "varchar(40)")
          .addUniqueConstraint("content_jobs_bot_kind_unique", ["bot_id", "kind"])
          .execute();
        await db.schema
          .createIndex("content_jobs_due_idx")
          .on("content_jobs")
          .columns(["state", "next_attempt_at"])
          .execute();

        await db.schema
          .createTable("transcripts")
          .addColumn("bot_id", "integer", (col) =>
            col.primaryKey().references("recordings.bot_id").onDelete("cascade"),
          )
          .addColumn("engine", "varchar(32)", (col) => col.notNull())
          .addColumn("language", "varchar(32)", (col) => col.notNull())
          .addColumn("duration_ms", "integer", (col) => col.notNull())
          .addColumn("text", "text", (col) => col.notNull())
          .addColumn("utterances", "text", (col) => col.notNull())
          .addColumn("completed_at", "varchar(40)", (col) => col.notNull())
          .execute();

        await db.schema
          .createTable("summaries")
          .addColumn("bot_id", "integer", (col) =>
            col.primaryKey().references("recordings.bot_id").onDelete("cascade"),
          )
          .addColumn("engine", "varchar(32)", (col) => col.notNull())
          .addColumn("overview", "text", (col) => col.notNull())
          .addColumn("key_points", "text", (col) => col.notNull())
          .addColumn("action_items", "text", (col) => col.notNull())
          .addColumn("decisions", "text", (col) => col.notNull())
          .addColumn("completed_at", "varchar(40)", (col) => col.notNull())
          .execute();
      },
    },
    "0008_user_plans": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // The notes interface's plan; null: the configured default plan (MEETBOT_DEFAULT_PLAN), so
        // that changing the default reaches every user nobody gave a plan to.
        await db.schema.alterTable("users").addColumn("plan", "varchar(16)").execute();

        // Requests per user per clock hour, shared by every server process on the database.
        await db.schema
          .createTable("plan_usage")
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("window_start", "varchar(40)", (col) => col.notNull())
          .addColumn("count", "integer", (col) => col.notNull())
          .addPrimaryKeyConstraint("plan_usage_pk", ["user_id", "window_start"])
          .execute();
      },
    },
    "0009_notes_meetings": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // A bot that reached IN_CALL is a meeting of the notes interface: its opaque public id, and
        // when the bot joined and left (the runner's BOT_JOINED and BOT_LEFT times).
        await db.schema.alterTable("bots").addColumn("meeting_id", "varchar(40)").execute();
        await db.schema.alterTable("bots").addColumn("meeting_started_at", "varchar(40)").execute();
        await db.schema.alterTable("bots").addColumn("meeting_ended_at", "varchar(40)").execute();
        await db.schema.createIndex("bots_meeting_id_idx").on("bots").column("meeting_id").unique().execute();
        await db.schema
          .createIndex("bots_meetings_idx")
          .on("bots")
          .columns(["user_id", "meeting_started_at", "id"])
          .execute();
        const firstEvent = (type: string) =>
          sql`(select min(e.event_time) from bot_events e where e.bot_id = bots.id and e.event_type = ${type})`;
        await sql`update bots set meeting_started_at = ${firstEvent("BOT_JOINED")}`.execute(db);
        await sql`update bots set meeting_ended_at = coalesce(${firstEvent("BOT_LEFT")}, ${firstEvent("ERROR")})
          where meeting_started_at is not null`.execute(db);
        const randomId =
          dialect === "sqlite"
            ? sql`lower(hex(randomblob(12)))`
            : sql`substr(md5(random()::text || id::text), 1, 24)`;
        await sql`update bots set meeting_id = 'mtg_' || ${randomId} where meeting_started_at is not null`.execute(
          db,
        );

        // Full-text search over meeting titles and transcripts.
        if (dialect === "sqlite") {
          for (const [name, table, key, column] of [
            ["meeting_title_fts", "bots", "id", "meeting_title"],
            ["transcript_fts", "transcripts", "bot_id", "text"],
          ] as const) {
            // External-content FTS5 tables, kept in step with their table by triggers (which SQLite
            // also fires for the rows an ON DELETE CASCADE removes).
            await sql
              .raw(
                `create virtual table ${name} using fts5(${column}, content='${table}',
              content_rowid='${key}', tokenize='porter unicode61')`,
              )
              .execute(db);
            await sql
              .raw(
                `create trigger ${name}_insert after insert on ${table} begin
              insert into ${name}(rowid, ${column}) values (new.${key}, new.${column}); end`,
              )
              .execute(db);
            await sql
              .raw(
                `create trigger ${name}_delete after delete on ${table} begin
              insert into ${name}(${name}, rowid, ${column}) values ('delete', old.${key}, old.${column}); end`,
              )
              .execute(db);
            await sql
              .raw(
                `create trigger ${name}_update after update of ${column} on ${table} begin
              insert into ${name}(${name}, rowid, ${column}) values ('delete', old.${key}, old.${column});
              insert into ${name}(rowid, ${column}) values (new.${key}, new.${column}); end`,
              )
              .execute(db);
            await sql.raw(`insert into ${name}(${name}) values ('rebuild')`).execute(db);
          }
        } else {
          await sql`create index bots_title_search_idx on bots using gin (to_tsvector('english', meeting_title))`.execute(
            db,
          );
          await sql`create index transcripts_text_search_idx on transcripts using gin (to_tsvector('english', text))`.execute(
            db,
          );
        }
      },
    },
    "0010_notes_webhooks": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // Which interface a webhook was registered on: "bot" (/v1/webhooks of the bot API) or
        // "notes" (the meeting-notes interface). Each sees and gets only its own events.
        await db.schema
          .alterTable("webhooks")
          .addColumn("api", "varchar(8)", (col) => col.notNull().defaultTo("bot"))
          .execute();
      },
    },
    "0011_session_revocation": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // Moved on by a password change or a revoke of all sessions; tokens carry the generation
        // they were issued under. A counter, not a time: a token issued in the same second (or
        // millisecond) as the revocation is on the right side of it.
        await db.schema
          .alterTable("users")
          .addColumn("session_generation", "integer", (col) => col.notNull().defaultTo(0))
          .execute();

        // One row per sign-in: the one refresh token it may still use. Refreshing replaces it
        // (a conditional UPDATE, so two uses of one token cannot both win); an older one revokes it.
        await db.schema
          .createTable("refresh_token_families")
          .addColumn("id", "varchar(64)", (col) => col.primaryKey())
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("current_jti", "varchar(64)", (col) => col.notNull())
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .addColumn("expires_at", "varchar(40)", (col) => col.notNull())
          .addColumn("revoked_at", "varchar(40)")
          .execute();
        await db.schema
          .createIndex("refresh_token_families_user_idx")
          .on("refresh_token_families")
          .columns(["user_id", "expires_at"])
          .execute();
      },
    },
    "0012_recording_data_deleted": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        await db.schema.alterTable("bots").addColumn("data_deleted_at", "varchar(40)").execute();
      },
    },
    "0013_bot_accounts": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // A user's signed-in platform accounts. The session (a Playwright storage state) is kept
        // only encrypted: AES-256-GCM under the key named by session_key_id (auth/secret-box.ts).
        await id(db.schema.createTable("bot_accounts"))
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("platform", "varchar(32)", (col) => col.notNull())
          .addColumn("name", "varchar(200)", (col) => col.notNull())
          .addColumn("account_group", "varchar(100)", (col) => col.notNull())
          .addColumn("max_concurrent", "integer", (col) => col.notNull())
          .addColumn("state", "varchar(16)", (col) => col.notNull())
          .addColumn("disabled", "integer", (col) => col.notNull())
          .addColumn("in_use", "integer", (col) => col.notNull())
          .addColumn("account_name", "varchar(300)")
          .addColumn("account_email", "varchar(320)")
          .addColumn("session_key_id", "varchar(32)", (col) => col.notNull())
          .addColumn("session_nonce", "varchar(32)", (col) => col.notNull())
          .addColumn("session_tag", "varchar(32)", (col) => col.notNull())
          .addColumn("session_ciphertext", "text", (col) => col.notNull())
          .addColumn("session_version", "integer", (col) => col.notNull())
          .addColumn("session_updated_at", "varchar(40)", (col) => col.notNull())
          .addColumn("last_used_at", "varchar(40)")
          .addColumn("last_checked_at", "varchar(40)")
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .addColumn("updated_at", "varchar(40)", (col) => col.notNull())
          .execute();
        await db.schema
          .createIndex("bot_accounts_pick_idx")
          .on("bot_accounts")
          .columns(["user_id", "platform", "account_group"])
          .execute();
        // A bot's login option (JSON), the account held for it at deploy, the session version it
        // was given (its write-back is kept only while that is still the account's), and whether
        // it still holds the account (counted in the account's in_use).
        await db.schema.alterTable("bots").addColumn("login", "text").execute();
        await db.schema
          .alterTable("bots")
          .addColumn("login_account_id", "integer", (col) =>
            col.references("bot_accounts.id").onDelete("set null"),
          )
          .execute();
        await db.schema.alterTable("bots").addColumn("login_session_version", "integer").execute();
        await db.schema
          .alterTable("bots")
          .addColumn("login_held", "integer", (col) => col.notNull().defaultTo(0))
          .execute();
      },
    },
    "0014_bot_account_checks": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // Account checks (services/account-checks.ts): a durable task, queued → running →
        // completed | failed. `lease_until`/`claim_token`: the worker's claim while it launches the
        // runner; `deadline_at`: when a running check whose runner never reported fails.
        await id(db.schema.createTable("bot_account_checks"))
          .addColumn("account_id", "integer", (col) =>
            col.notNull().references("bot_accounts.id").onDelete("cascade"),
          )
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("state", "varchar(16)", (col) => col.notNull())
          .addColumn("origin", "varchar(16)", (col) => col.notNull())
          .addColumn("meeting_url", "varchar(2048)", (col) => col.notNull())
          .addColumn("attempts", "integer", (col) => col.notNull())
          .addColumn("lease_until", "varchar(40)")
          .addColumn("claim_token", "varchar(32)")
          .addColumn("token_hash", "varchar(64)")
          .addColumn("session_version", "integer")
          .addColumn("deadline_at", "varchar(40)")
          .addColumn("result", "varchar(16)")
          .addColumn("error_message", "text")
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .addColumn("updated_at", "varchar(40)", (col) => col.notNull())
          .addColumn("completed_at", "varchar(40)")
          .execute();
        // Never two checks of one account at once, whatever the number of server processes.
        await sql`create unique index bot_account_checks_one_active on bot_account_checks (account_id)
          where state in ('queued', 'running')`.execute(db);
        await db.schema
          .createIndex("bot_account_checks_state_idx")
          .on("bot_account_checks")
          .columns(["state", "lease_until"])
          .execute();
        // The meeting a check opens to reach the pre-join (the last one a check was asked with).
        await db.schema.alterTable("bot_accounts").addColumn("check_meeting_url", "varchar(2048)").execute();
      },
    },
    "0015_bot_commands": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // Commands to running bots (services/commands.ts): queued → sent → done | failed, kept
        // until the runner acknowledges each, so that a restart or a dropped poll loses none.
        await id(db.schema.createTable("bot_commands"))
          .addColumn("bot_id", "integer", (col) => col.notNull().references("bots.id").onDelete("cascade"))
          .addColumn("kind", "varchar(32)", (col) => col.notNull())
          .addColumn("payload", "text", (col) => col.notNull())
          .addColumn("state", "varchar(16)", (col) => col.notNull())
          .addColumn("result", "text")
          .addColumn("error_code", "varchar(64)")
          .addColumn("error_message", "text")
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .addColumn("sent_at", "varchar(40)")
          .addColumn("deadline_at", "varchar(40)", (col) => col.notNull())
          .addColumn("completed_at", "varchar(40)")
          .execute();
        await db.schema
          .createIndex("bot_commands_bot_idx")
          .on("bot_commands")
          .columns(["bot_id", "state"])
          .execute();
        // The deadline sweep reads only the commands still open.
        await sql`create index bot_commands_open_idx on bot_commands (deadline_at)
          where state in ('queued', 'sent')`.execute(db);
      },
    },
    "0016_live_meeting": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // The bot options liveTranscript and chat (JSON), as created.
        await db.schema.alterTable("bots").addColumn("live_transcript", "text").execute();
        await db.schema.alterTable("bots").addColumn("chat_options", "text").execute();
        // A bot's live stream (GET /v1/bots/{id}/live): what happened in the meeting, in order,
        // resumable by id. A partial is deleted once its utterance's final is in: resuming, a
        // client needs only the final.
        await id(db.schema.createTable("live_events"))
          .addColumn("bot_id", "integer", (col) => col.notNull().references("bots.id").onDelete("cascade"))
          .addColumn("event_type", "varchar(40)", (col) => col.notNull())
          .addColumn("utterance_id", "varchar(100)")
          .addColumn("data", "text", (col) => col.notNull())
          .addColumn("event_time", "varchar(40)", (col) => col.notNull())
          .execute();
        await db.schema
          .createIndex("live_events_bot_idx")
          .on("live_events")
          .columns(["bot_id", "id"])
          .execute();
        // The settled utterances of a live transcript: the stored transcript is made of them.
        await db.schema
          .createTable("live_utterances")
          .addColumn("bot_id", "integer", (col) => col.notNull().references("bots.id").onDelete("cascade"))
          .addColumn("utterance_id", "varchar(100)", (col) => col.notNull())
          .addColumn("speaker_id", "varchar(200)")
          .addColumn("speaker_name", "varchar(300)")
          .addColumn("text", "text", (col) => col.notNull())
          .addColumn("start_ms", "integer", (col) => col.notNull())
          .addColumn("end_ms", "integer", (col) => col.notNull())
          .addColumn("source", "varchar(16)", (col) => col.notNull())
          .addColumn("language", "varchar(35)")
          .addPrimaryKeyConstraint("live_utterances_pk", ["bot_id", "utterance_id"])
          .execute();
        // The meeting's chat, each message once (the page re-renders them; the runner may resend).
        await id(db.schema.createTable("chat_messages"))
          .addColumn("bot_id", "integer", (col) => col.notNull().references("bots.id").onDelete("cascade"))
          .addColumn("message_id", "varchar(300)", (col) => col.notNull())
          .addColumn("sender_id", "varchar(200)")
          .addColumn("sender_name", "varchar(300)")
          .addColumn("text", "text", (col) => col.notNull())
          .addColumn("sent_at", "varchar(40)", (col) => col.notNull())
          .addColumn("from_bot", "integer", (col) => col.notNull())
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .execute();
        await db.schema
          .createIndex("chat_messages_bot_message_idx")
          .on("chat_messages")
          .columns(["bot_id", "message_id"])
          .unique()
          .execute();
      },
    },
    "0017_bot_output": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // The bot option output (JSON), as created.
        await db.schema.alterTable("bots").addColumn("output_options", "text").execute();
      },
    },
    "0018_bot_audio_stream": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // The bot option audioStream (JSON without the token) and its token, sealed.
        await db.schema.alterTable("bots").addColumn("audio_stream", "text").execute();
        await db.schema.alterTable("bots").addColumn("audio_stream_token", "text").execute();
      },
    },
    "0019_bot_schedule": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // A scheduled bot (services/schedules.ts): deployed by the server at join_at minus the
        // lead. The schedule's claim is a lease on the bot row, as the other durable tasks have.
        await db.schema.alterTable("bots").addColumn("join_at", "varchar(40)").execute();
        await db.schema.alterTable("bots").addColumn("schedule_claim_token", "varchar(40)").execute();
        await db.schema.alterTable("bots").addColumn("schedule_lease_until", "varchar(40)").execute();
        // The claim and GET /v1/bots?scheduled=true read only the bots still waiting for their time.
        await sql`create index bots_schedule_idx on bots (join_at)
          where status = 'READY_TO_DEPLOY' and join_at is not null`.execute(db);
      },
    },
    "0020_bot_retention": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // The bot option retention.hours, and when the bot ended (DONE or FATAL): its data is
        // deleted that long after (services/retention.ts). data_expires_at: ended_at + the bot's
        // own hours, set as it ends; bots without their own go by MEETBOT_RETENTION_HOURS.
        await db.schema.alterTable("bots").addColumn("retention_hours", "double precision").execute();
        await db.schema.alterTable("bots").addColumn("ended_at", "varchar(40)").execute();
        await db.schema.alterTable("bots").addColumn("data_expires_at", "varchar(40)").execute();
        // The sweep's claim: a lease on the bot row, as the other durable tasks have.
        await db.schema.alterTable("bots").addColumn("retention_claim_token", "varchar(40)").execute();
        await db.schema.alterTable("bots").addColumn("retention_lease_until", "varchar(40)").execute();
        // Bots that ended before this migration: their last change is when they ended, near enough.
        await sql`update bots set ended_at = updated_at where status in ('DONE', 'FATAL')`.execute(db);
        // The sweep reads only the ended bots whose data is still there.
        await sql`create index bots_retention_idx on bots (ended_at)
          where ended_at is not null and data_deleted_at is null`.execute(db);
      },
    },
    "0022_calendars": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // A user's iCalendar feed (services/calendars.ts): its address sealed with
        // MEETBOT_SECRET_KEY (it grants read access to someone's calendar), only its host in the
        // clear. The sync is a durable task: due at next_sync_at, claimed with a lease.
        await id(db.schema.createTable("calendars"))
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("name", "varchar(200)", (col) => col.notNull())
          .addColumn("url_sealed", "text", (col) => col.notNull())
          .addColumn("url_host", "varchar(300)", (col) => col.notNull())
          .addColumn("auto_join", "varchar(8)", (col) => col.notNull())
          .addColumn("bot_defaults", "text")
          .addColumn("last_sync_at", "varchar(40)")
          .addColumn("last_sync_error", "text")
          .addColumn("last_synced_at", "varchar(40)")
          .addColumn("next_sync_at", "varchar(40)", (col) => col.notNull())
          .addColumn("sync_claim_token", "varchar(40)")
          .addColumn("sync_lease_until", "varchar(40)")
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .addColumn("updated_at", "varchar(40)", (col) => col.notNull())
          .execute();
        await db.schema
          .createIndex("calendars_user_idx")
          .on("calendars")
          .columns(["user_id", "id"])
          .execute();
        await db.schema.createIndex("calendars_due_idx").on("calendars").columns(["next_sync_at"]).execute();
        // The feed's events with a meeting link in the sync window, one row per instance
        // (recurrence_id "" for an event that does not recur), and the bot each has, if any.
        await id(db.schema.createTable("calendar_events"))
          .addColumn("calendar_id", "integer", (col) =>
            col.notNull().references("calendars.id").onDelete("cascade"),
          )
          .addColumn("user_id", "integer", (col) => col.notNull().references("users.id").onDelete("cascade"))
          .addColumn("uid", "varchar(500)", (col) => col.notNull())
          .addColumn("recurrence_id", "varchar(40)", (col) => col.notNull())
          .addColumn("title", "varchar(300)", (col) => col.notNull())
          .addColumn("start_at", "varchar(40)", (col) => col.notNull())
          .addColumn("end_at", "varchar(40)", (col) => col.notNull())
          .addColumn("meeting_info", "text", (col) => col.notNull())
          .addColumn("meeting_key", "varchar(500)", (col) => col.notNull())
          // auto: as the calendar's autoJoin says; on / off: a bot added or removed by hand.
          .addColumn("bot_mode", "varchar(8)", (col) => col.notNull())
          .addColumn("bot_id", "integer", (col) => col.references("bots.id").onDelete("set null"))
          .addColumn("created_at", "varchar(40)", (col) => col.notNull())
          .addColumn("updated_at", "varchar(40)", (col) => col.notNull())
          .execute();
        await db.schema
          .createIndex("calendar_events_instance_idx")
          .on("calendar_events")
          .columns(["calendar_id", "uid", "recurrence_id"])
          .unique()
          .execute();
        // One meeting in two feeds: found by its link and start among the user's events.
        await db.schema
          .createIndex("calendar_events_meeting_idx")
          .on("calendar_events")
          .columns(["user_id", "meeting_key", "start_at"])
          .execute();
        await db.schema
          .createIndex("calendar_events_bot_idx")
          .on("calendar_events")
          .columns(["bot_id"])
          .execute();
      },
    },
    "0023_bot_recording": {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
      async up(db: Kysely<any>) {
        // The bot option recording (JSON, `{"video":false}` for an audio-only bot); null: the
        // defaults (video). The recordings table's own `format` says what was stored.
        await db.schema.alterTable("bots").addColumn("recording_options", "text").execute();
      },
    },
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the migrator is schema agnostic
export async function migrateToLatest(db: Kysely<any>, dialect: DialectName): Promise<void> {
  const all = migrations(dialect);
  const migrator = new Migrator({ db, provider: { getMigrations: async () => all } });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === "Error");
  if (error || failed) {
    // Usually the operator's to fix (the database user may not create tables, ...): say why.
    const why = error instanceof Error ? `: ${error.message}` : "";
    throw new StartupError(`database migration failed${failed ? ` at ${failed.migrationName}` : ""}${why}`, {
      cause: error,
    });
  }
}
