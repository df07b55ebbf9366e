import { chatLengthProblem, type Platform } from "../../core/index.js";
import { ValidationError } from "../errors.js";
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { ChatMessageList, ChatMessageView, Command } from "../schemas/index.js";
import type { BotService } from "./bots.js";
import type { CommandService } from "./commands.js";
import type { ServiceContext } from "./context.js";

/** 422 at `loc` when the platform's chat would refuse `text`: refused before anything is sent. */
export function checkChatLength(platform: Platform, text: string, loc: (string | number)[]): void {
  const problem = chatLengthProblem(platform, text);
  if (problem) throw new ValidationError([{ loc, msg: problem, type: "value_error" }]);
}

/** The meeting's chat: what the bot read (GET /v1/bots/{id}/chat-messages) and what it sends. */
export class ChatService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
    private readonly commands: CommandService,
  ) {}

  async list(
    userId: number,
    botId: number,
    query: { page: number; page_size: number },
  ): Promise<ChatMessageList> {
    await this.bots.requireOwned(userId, botId);
    const base = this.ctx.db.selectFrom("chat_messages").where("bot_id", "=", botId);
    const { total } = await base.select((eb) => eb.fn.countAll().as("total")).executeTakeFirstOrThrow();
    const messages = await readChatMessages(this.ctx.db, botId, {
      limit: query.page_size,
      offset: (query.page - 1) * query.page_size,
    });
    return {
      messages,
      total: Number(total),
      page: query.page,
      page_size: query.page_size,
    };
  }

  /** POST /v1/bots/{id}/chat: a command the bot's runner types into the meeting's chat. */
  async send(userId: number, botId: number, text: string): Promise<Command> {
    const bot = await this.bots.requireOwned(userId, botId);
    checkChatLength(bot.platform as Platform, text, ["body", "text"]);
    return this.commands.queue(userId, botId, "chat", { text }, ["IN_CALL"], { reuseOpen: false });
  }
}

/** The bot's chat messages as the API shows them, oldest first (a page of them, or all). */
export async function readChatMessages(
  db: Kysely<Database>,
  botId: number,
  page?: { limit: number; offset: number },
): Promise<ChatMessageView[]> {
  const rows = await db
    .selectFrom("chat_messages")
    .selectAll()
    .where("bot_id", "=", botId)
    .orderBy("sent_at")
    .orderBy("id")
    .$if(page !== undefined, (qb) => qb.limit(page?.limit ?? 0).offset(page?.offset ?? 0))
    .execute();
  return rows.map((row) => ({
    messageId: row.message_id,
    sender: row.sender_id === null ? null : { participantId: row.sender_id, name: row.sender_name ?? "" },
    text: row.text,
    sentAt: row.sent_at,
    fromBot: row.from_bot === 1,
  }));
}
