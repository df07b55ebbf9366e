import type { Page } from "playwright";
import type { LiveNote } from "../live.js";
import { openChatPanel, sendChatMessage } from "../live-actions.js";
import { ZOOM_LIVE_HOOKS } from "./selectors.js";

/**
 * Zoom's chat: the footer's chat button shows the panel (under the participants list, which stays
 * open); a guest first dismisses the "chatting as guest" tip; the ProseMirror composer sends with
 * Enter and clears once Zoom took the message.
 */
export const openZoomChat = (page: Page, { note }: { note: LiveNote }) =>
  openChatPanel(page, ZOOM_LIVE_HOOKS.chat, note);

export const sendZoomChat = (page: Page, text: string, { note }: { note: LiveNote }) =>
  sendChatMessage(page, ZOOM_LIVE_HOOKS.chat, text, note);
