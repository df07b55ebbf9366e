import type { SignInHooks } from "../adapter.js";

/**
 * Every Google Meet hook the bot relies on, in one place: when Meet changes its UI, this is
 * the file to fix. Sources: the hooks public meeting bots depend on (docs/notes/platform-hooks.md).
 */
export const MEET_HOOKS = {
  nameInput: 'input[type="text"][aria-label="Your name"]',
  /** Any element, not only a button: Meet has rendered the toggles as `div[role="button"]` too. */
  microphoneOff: '[aria-label="Turn off microphone"]',
  cameraOff: '[aria-label="Turn off camera"]',
  /** Clicked instead when the bot joins showing a picture. */
  cameraOn: '[aria-label="Turn on camera"]',
  /**
   * Texts of the pre-join call-to-action (a `<span>` in a button; matched as the button's
   * accessible name, so an aria-hidden icon beside it does not count). The bot takes the first
   * one shown in this order. "Join here too": a second session of a signed-in account already in
   * the call.
   */
  joinButtonTexts: ["Ask to join", "Join now", "Ask to join anyway", "Join anyway", "Join here too"],
  /**
   * Offered when the signed-in account is in the call elsewhere (a `div[role="button"]`). Trap:
   * never clicked: it moves the call here and pulls the account's other session out of it. Shown
   * alone, the account is busy: the bot ends LOGIN_UNAVAILABLE.
   */
  switchHereTexts: ["Switch here"],
  /**
   * The Google bar's account button on every page of a signed-in account, labelled
   * "Google Account: <name>\n(<email>)": what proves the pre-join is signed in (with no name field).
   */
  accountButton: '[aria-label^="Google Account:"]',
  accountLabelPattern: "^Google Account:\\s*([\\s\\S]*?)\\s*\\(([^()\\s]+@[^()\\s]+)\\)\\s*$",
  /**
   * Where the wall for anonymous guests puts its words. Trap: match the heading only: the line
   * under it ("No one can join a meeting unless invited or admitted by the host") is also on
   * Meet's home page, and "Return to home screen" is an ordinary lobby button.
   */
  heading: 'h1, h2, [role="heading"]',
  /**
   * Pop-ups that can cover the pre-join form, in any order and stacked either way (the device
   * modal's scrim over the "Got it" pop-up): the bot clicks the one on top first. Trap: never
   * "Allow microphone and camera" beside the latter, which asks for the devices the bot turns off.
   */
  dismissButtonTexts: ["Got it", "Continue without microphone and camera"],
  /** Trap: "Leave call" is already in the toolbar in the lobby, so it never proves admission. */
  leaveCall: 'button[aria-label="Leave call"]',
  /** Only rendered once admitted (label like "People - 3"); also opens and closes the roster. */
  peopleButton: 'button[aria-label^="People"]',
  /**
   * Evidence of admission only, never a scope for the entries. Trap: Meet also renders the
   * entries in a container labelled otherwise ("Contributors" in a region "In the meeting").
   */
  roster: '[aria-label="Participants"]',
  /**
   * A roster entry, found wherever it is rendered; it names its participant in aria-label. Trap:
   * the panel may be closed at admission and then not in the DOM at all (see `tile`).
   */
  rosterEntry: "[data-participant-id][aria-label]",
  /**
   * On the bot's own roster entry and tile (or inside them): how the page says "this is you", and
   * the only way the bot tells itself apart. Trap: never the name, which anyone can take.
   */
  selfMarker: "[data-self-name]",
  /**
   * A participant's video tile (entries carry the same id attribute): who is speaking, and who is
   * there while no roster entry is rendered. Its name is in `tileName`, not in an aria-label.
   */
  tile: "[data-participant-id]",
  tileName: "span.notranslate",
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
    blocked: ["There is a problem connecting to this video call"],
    /**
     * Headings (see `heading`) of the wall an anonymous guest meets where the meeting admits only
     * signed-in people (2026; either apostrophe): SIGN_IN_REQUIRED.
     */
    cantJoin: [
      "You can't join this video call",
      "You can’t join this video call",
      "You can't join this meeting",
      "You can’t join this meeting",
    ],
    /** Google's sign-in pages (accounts.google.com), where an expired session is sent. */
    signIn: [
      "to continue to your Google Account",
      "Sign in to your Google Account",
      "Use your Google Account",
      "Verify it's you",
      "Verify it’s you",
    ],
    removed: ["You've been removed from the meeting"],
    ended: ["The call ended", "Meeting ended"],
    left: ["You left the meeting"],
  },
};

/**
 * Signing a bot account in once (`meetbot login google`): Google's accounts page, and the cookies
 * a Google sign-in sets on google.com (docs/notes/getting-in-2026.md).
 */
export const MEET_SIGN_IN: SignInHooks = {
  url: "https://accounts.google.com/",
  cookieDomain: "google.com",
  sessionCookies: [
    "SID",
    "HSID",
    "SSID",
    "APISID",
    "SAPISID",
    "__Secure-1PSID",
    "__Secure-3PSID",
    "__Secure-1PAPISID",
    "__Secure-3PAPISID",
  ],
};

/**
 * Captions and chat (docs/notes/live-meeting.md; read by platforms/live.ts, clicked by
 * captions.ts and chat.ts): when Meet changes them, this is the file to fix.
 */
export const MEET_LIVE_HOOKS = {
  /** In the call controls, the same labels as on the pre-join. The host's notice: not confirmed from a public source. */
  microphone: {
    onButton: '[aria-label="Turn off microphone"]',
    offButton: '[aria-label="Turn on microphone"]',
    hostMutedPattern: "muted you|muted your microphone",
  },
  /** The camera's toggle in the call controls: the pre-join's labels (platform-hooks.md). */
  camera: {
    onButton: '[aria-label="Turn off camera"]',
    offButton: '[aria-label="Turn on camera"]',
  },
  /**
   * More options → Settings → Video → "Receive resolution" → "Audio only": Meet then receives
   * and decodes no participant's video (public help pages on Meet's data use name the path and
   * its "Send resolution"/"Receive resolution" lists; the "Audio only" choice is from Meet's
   * receive list). The settings dialog opens on its Audio tab. Not confirmed from a public
   * source: the dialog's close button's label and the list's roles (a combobox and options).
   */
  incomingVideo: {
    moreButton: 'button[aria-label="More options"]',
    settingsItemTexts: ["Settings"],
    dialog: '[role="dialog"]',
    videoTabTexts: ["Video"],
    receiveResolutionTexts: ["Receive resolution"],
    audioOnlyTexts: ["Audio only"],
    closeButton: 'button[aria-label="Close dialog"], button[aria-label="Close"]',
  },
  captions: {
    /**
     * The toolbar's toggle, confirmed by its label flipping to "Turn off captions". Disabled
     * (`disabled` or `aria-disabled`) where the host switched captions off. Some builds render it
     * as a `div[role="button"]`.
     */
    turnOnButton: 'button[aria-label="Turn on captions"], [role="button"][aria-label="Turn on captions"]',
    turnOffButton: 'button[aria-label="Turn off captions"], [role="button"][aria-label="Turn off captions"]',
    /** Meet's shortcut, for a toolbar that shows no captions button (a narrow one folds it away). */
    shortcutText: "c",
    /** The region of speaker blocks; older builds label it with more words ("Captions" in it). */
    region: 'div[role="region"][aria-label="Captions"], [role="region"][aria-label*="Captions"]',
    /** One block per speaker turn, its text rewritten in place while the person talks. */
    entry: "div.nMcdL",
    text: "div.ygicle",
    /** In the block's `div.adE6rb` beside the avatar: the speaker's name, "You" for the user. */
    speakerName: "span.NWpY1d",
    selfTexts: ["You"],
    /** The caption language list; `data-value` is a BCP 47 code (en-US, de-DE). */
    languageOption: 'ul[aria-label="Meeting language"] li[data-value]',
  },
  chat: {
    /** "Chat with everyone"; some builds label it "In-call messages…". */
    openButton: 'button[aria-label="Chat with everyone"], button[aria-label^="In-call messages"]',
    openedButton: '[aria-pressed="true"], [aria-expanded="true"]',
    composer: 'textarea[aria-label="Send a message"], [role="textbox"][aria-label="Send a message"]',
    sendButton: 'button[aria-label="Send a message"]',
    tipDismissTexts: ["Got it"],
    /**
     * A message, with its id (`spaces/<space>/messages/<microseconds>`). Trap: the pinned-message
     * overlay (`excluded`) carries the same attribute and id.
     */
    message: ".RLrADb[data-message-id], [data-message-id]",
    excluded: ".Sd72u",
    text: '.jO4O1, div[jsname="dTKtvb"]',
    /** In the group header `.HNucUd` over a run of one sender's messages; the user's own runs have none. */
    sender: ".poVWob",
    ownWhenNoSender: true,
    selfTexts: ["You"],
    messageIdAttributes: ["data-message-id"],
  },
};
