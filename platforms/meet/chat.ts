import type { Page } from "playwright";
import type { LiveNote } from "../live.js";
import { openChatPanel, sendChatMessage } from "../live-actions.js";
import { MEET_LIVE_HOOKS } from "./selectors.js";

/**
 * Meet's chat: "Chat with everyone" shows the panel (which takes the People panel's place, whose
 * entries Meet may then drop: the roster falls back to the tiles); the composer sends with Enter
 * and clears once Meet took the message.
 */
export const openMeetChat = (page: Page, { note }: { note: LiveNote }) =>
  openChatPanel(page, MEET_LIVE_HOOKS.chat, note);

export const sendMeetChat = (page: Page, text: string, { note }: { note: LiveNote }) =>
  sendChatMessage(page, MEET_LIVE_HOOKS.chat, text, note);
