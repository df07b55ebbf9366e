/**
 * Every Google Meet hook the bot relies on, in one place: when Meet changes its UI, this is
 * the file to fix. Sources: the hooks public meeting bots depend on (shared/notes/platform-hooks.md).
 */
export const MEET_HOOKS = {
  nameInput: 'input[type="text"][aria-label="Your name"]',
  microphoneOff: '[aria-label="Turn off microphone"]',
  cameraOff: '[aria-label="Turn off camera"]',
  /** Texts of the pre-join call-to-action, in the order Meet offers them. */
  joinButtonTexts: [
    "Ask to join",
    "Join now",
    "Ask to join anyway",
    "Join anyway",
    "Join here too",
    "Switch here",
  ],
  /** Pop-ups that can cover the pre-join form. */
  dismissButtonTexts: ["Got it", "Continue without microphone and camera"],
  /** Trap: "Leave call" is already in the toolbar in the lobby, so it never proves admission. */
  leaveCall: 'button[aria-label="Leave call"]',
  /** Only rendered once admitted (label like "People - 3"). */
  peopleButton: 'button[aria-label^="People"]',
  roster: '[aria-label="Participants"]',
  rosterEntry: "[data-participant-id]",
  selfMarker: "[data-self-name]",
  /** A participant's video tile; the roster entries carry the same attribute, so scope by roster. */
  tile: "[data-participant-id]",
  /** Meet marks the tile of whoever is talking: an audio level above 0, or its speaking classes. */
  speakingTile: '[data-audio-level]:not([data-audio-level="0"]), .Oaajhc, .HX2H7',
  texts: {
    lobby: [
      "Asking to be let in",
      "You’ll join the call when someone lets you in",
      "Please wait until a meeting host brings you into the call",
      "Waiting for the host to join",
    ],
    denied: [
      "Someone in the call denied your request to join",
      "No one responded to your request to join the call",
    ],
    notFound: ["Check your meeting code", "Invalid video call name"],
    blocked: ["You can't join this video call", "There is a problem connecting to this video call"],
    signIn: ["to continue to your Google Account", "Sign in to your Google Account"],
    removed: ["You've been removed from the meeting"],
    ended: ["The call ended", "Meeting ended"],
    left: ["You left the meeting"],
  },
};
