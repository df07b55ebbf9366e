import type { Page } from "playwright";
import type { LiveNote } from "../live.js";
import { openChatPanel, sendChatMessage } from "../live-actions.js";
import { TEAMS_LIVE_HOOKS } from "./selectors.js";

/**
 * Teams' chat: `#chat-button` shows the meeting chat pane, which holds messages only while it
 * shows (so the bot keeps it open); a guest without chat rights has no such button
 * (CHAT_UNAVAILABLE). The composer sends with Enter after typed input.
 */
export const openTeamsChat = (page: Page, { note }: { note: LiveNote }) =>
  openChatPanel(page, TEAMS_LIVE_HOOKS.chat, note);

export const sendTeamsChat = (page: Page, text: string, { note }: { note: LiveNote }) =>
  sendChatMessage(page, TEAMS_LIVE_HOOKS.chat, text, note);
