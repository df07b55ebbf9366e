import type { SignInHooks } from "../adapter.js";

/**
 * Every Microsoft Teams hook the bot relies on, in one place: when Teams changes its web client,
 * this is the file to fix. Sources: the hooks public meeting bots depend on
 * (docs/notes/platform-hooks.md), plus the texts and attributes noted per entry.
 */
export const TEAMS_HOOKS = {
  /**
   * Real links first open a launcher ("How do you want to join your Teams meeting?") that offers
   * the desktop app; the web client is one click away. The launcher counts as pre-join.
   */
  launcher: {
    joinOnWeb: 'button[data-tid="joinOnWeb"]',
    /** The same button's visible text and aria-label variants, for when the data-tid moves. */
    joinOnWebTexts: ["Continue on this browser", "Join on this browser", "Join meeting from this browser"],
  },
  prejoin: {
    /** Placeholder "Type your name"; only anonymous guests get it. */
    nameInput: 'input[data-tid="prejoin-display-name-input"]',
    /**
     * Trap: these are switches (`input[role="switch"]`), not buttons with flipping labels: "on"
     * is `aria-checked="true"` or the `checked` property, so read the state before clicking.
     */
    microphoneSwitch: '[data-tid="toggle-mute"]',
    cameraSwitch: '[data-tid="toggle-video"]',
    /**
     * Trap: "Don't use audio" also turns the meeting's sound off for the bot, which would then
     * record silence. The bot picks "Computer audio" and mutes its microphone instead.
     */
    computerAudioText: "Computer audio",
    /** Disabled until a name is typed, and again (still on screen) while waiting in the lobby. */
    joinButton: '[data-tid="prejoin-join-button"]',
    /** Leaves the lobby (pre-join "Cancel"). */
    cancelButton: '[data-tid="prejoin-cancel-button"]',
    /** Camera and microphone both off: Teams asks once more before joining. */
    noAudioVideoTitle: "Are you sure you don't want audio or video?",
    noAudioVideoContinueText: "Continue without audio or video",
  },
  /**
   * What may lie over the control the bot needs, on any screen: dialogs (the device prompt
   * "Select Allow to let Microsoft Teams use your mic and camera", sometimes over the no-audio
   * confirmation), banners ("Recording has started") and toasts. Trap: they come in any order,
   * stacked or late, so the bot acts on whichever is on top, and a toast may have no button at all
   * (it goes away by itself: the covered click is tried again).
   */
  overlays: {
    container: '[role="dialog"], [role="alertdialog"], [role="alert"], [role="status"]',
    /** The button that closes one (Teams' banners and prompts say "Dismiss"). */
    dismissTexts: ["Dismiss"],
  },
  call: {
    /**
     * Trap: the hang-up button is in the lobby's toolbar too, so it never proves admission on
     * its own; in_call also needs one of `callOnly` below. Ids and data-tid vary by build.
     */
    hangup:
      '#hangup-button, button[data-tid="hangup-main-btn"], [data-inp="hangup-button"], button[aria-label="Leave (Ctrl+Shift+H)"]',
    /** Only rendered once admitted: the People button, the roster, the stage's video tiles. */
    callOnly: [
      "#roster-button",
      'button[data-tid="calling-toolbar-people-button"]',
      'button[aria-label="People"]',
      '[aria-label="People"] [role="tree"]',
      '[data-tid^="participantsInCall-"]',
      '[data-cid="calling-participant-stream"]',
    ],
    /**
     * Opens the People panel. Trap: builds drop the id or the data-tid; the label "People" stays
     * (on the button only: the panel it opens may be labelled otherwise).
     */
    peopleButton: [
      "#roster-button",
      'button[data-tid="calling-toolbar-people-button"]',
      'button[aria-label="People"]',
    ],
    /**
     * The roster: items `participantsInCall-<id>`, whose suffix is the stable id (on the real site
     * an id or address, sometimes the display name). Trap: they are usually in a `[role="tree"]`
     * inside the panel labelled "People", but real pages label that panel otherwise (only the
     * People button says "People") and render the tree only while the panel is open, so items are
     * read wherever they are, and the panel is opened when there are none (see `stageTile`).
     */
    rosterItem: '[data-tid^="participantsInCall-"]',
    rosterItemPrefix: "participantsInCall-",
    /** The clean display name; the item's text also carries "(You)", "(Unverified)", roles. */
    rosterName: "span[title]",
    /**
     * How Teams tags the user's own roster entry, beside the name. Trap: only outside the name
     * counts: anyone can be called "Eve (You)", or take the bot's very name, and is then someone
     * else in the call, not the bot.
     */
    selfMarkers: ["(You)"],
    /**
     * The user's own video on the stage (self view), as public Teams recorders find the local user.
     * Whatever tile structure it has, it is the bot's and nobody else's.
     */
    selfTile: '[data-tid="myself-video"]',
    /**
     * Video tiles on the stage. They name the others when the roster is not rendered, and carry
     * the speaking indicator. Trap: two structures exist, `[data-cid="calling-participant-stream"]`
     * whose `data-tid` is the roster item's id, and `[data-stream-type]` whose `data-tid` may be
     * the display name; they may nest, so a tile is matched to a participant by id or by name.
     */
    stageTile: '[data-cid="calling-participant-stream"], [data-stream-type][data-tid]',
    tileName: '[data-tid="participant-info-nametag"], [data-tid*="display-name"]',
    /**
     * Teams draws the speaking ring on this outline by giving it the class below; the outline is
     * in every tile structure, so it is the speaking hook (whatever tile or item holds it).
     */
    voiceOutline: '[data-tid="voice-level-stream-outline"]',
    speakingClass: "vdi-frame-occlusion",
    /**
     * Trap: banners such as "Recording has started" are `[role="alert"]` with a Dismiss button;
     * some bots take any alert for a removal. Only the texts below end the call.
     */
    harmlessAlert: '[role="alert"]',
  },
  /** Microsoft's sign-in page (login.microsoftonline.com), where a tenant may send guests. */
  loginForm: 'input[name="loginfmt"]',
  /**
   * Microsoft 365's account control in a signed-in page's header ("Account manager for <name>",
   * the e-mail in its secondary line): with no name field, it proves the pre-join signed in.
   * Trap: Teams sometimes shows the guest pre-join (a name field) after a sign-in: not signed in.
   */
  account: {
    control: '#mectrl_main_trigger, [aria-label^="Account manager for "]',
    labelPrefix: "Account manager for",
    email: "#mectrl_currentAccount_secondary",
  },
  texts: {
    lobby: ["Someone will let you in shortly", "Someone will let you in soon"],
    /**
     * Nobody from the organizer's side has started the meeting yet (Teams' own wording, quoted in
     * office365itpros.com's "Don't Get Stuck in the Teams Meeting Lobby"); the bot waits.
     */
    hostNotStarted: [
      "When the meeting starts, we'll let people know you're waiting",
      "When the meeting starts, we’ll let people know you’re waiting",
      "Someone will let you in when the meeting starts",
    ],
    denied: ["Sorry, but you were denied access to the meeting", "Your request to join was declined"],
    /** attendee-labs/attendee, teams_ui_methods.py (invalid meeting URL). */
    notFound: ["Looks like the meeting URL is incorrect"],
    /**
     * The captcha Teams shows a suspected bot (attendee-labs/attendee, teams_ui_methods.py), either
     * apostrophe: BOT_BLOCKED, never solved.
     */
    botWall: ["Verify you're a real person", "Verify you’re a real person"],
    /** attendee-labs/attendee, teams_ui_methods.py (sign-in required messages). */
    signIn: [
      "We need to verify your info before you can join",
      "To join, sign in or use Teams on the web",
      "You need to be signed in to Teams to access this meeting",
      "Sign in to Teams to join, or contact the meeting organizer",
      "To join this Teams meeting, you need to be signed in to an account",
    ],
    removed: ["You've been removed from this meeting", "You have been removed from this meeting"],
    /** Teams' end-of-meeting screen; the end phrases public Teams recorders watch for. */
    ended: ["The meeting has ended", "This meeting has ended", "This call has ended"],
    left: ["You left the meeting"],
  },
};

export type TeamsHooks = typeof TEAMS_HOOKS;

/**
 * Signing a bot account in once (`meetbot login teams`): Teams on the web, which sends a signed-out
 * visitor to Microsoft's sign-in page (login.microsoftonline.com) and back, where its web client
 * (MSAL) keeps the account in localStorage. Saved once Microsoft's session cookie is there
 * (`ESTSAUTHLIGHT` and `SignInStateCookie` are markers, not sessions) and the account keys too.
 */
export const TEAMS_SIGN_IN: SignInHooks = {
  url: "https://teams.microsoft.com/v2/",
  cookieDomain: "login.microsoftonline.com",
  sessionCookies: ["ESTSAUTH", "ESTSAUTHPERSISTENT"],
  storageItems: ["msal.account.keys"],
};

/**
 * Captions and chat (docs/notes/live-meeting.md; read by platforms/live.ts, clicked by
 * captions.ts and chat.ts): when Teams changes them, this is the file to fix.
 */
export const TEAMS_LIVE_HOOKS = {
  /**
   * The call toolbar's microphone button (`#microphone-button`, labelled "Mute"/"Unmute" with its
   * shortcut, as public bots use it). The host's notice: not confirmed from a public source.
   */
  microphone: {
    onButton: '#microphone-button[aria-label^="Mute"], [data-tid="microphone-button"][aria-label^="Mute"]',
    offButton:
      '#microphone-button[aria-label^="Unmute"], [data-tid="microphone-button"][aria-label^="Unmute"]',
    hostMutedPattern: "muted you|can't unmute",
  },
  /**
   * The call toolbar's camera button (`#video-button`, labelled "Turn camera on" / "Turn camera
   * off", with a shortcut in some builds); not confirmed from a public source.
   */
  camera: {
    onButton: '#video-button[aria-label^="Turn camera off"]',
    offButton: '#video-button[aria-label^="Turn camera on"]',
  },
  captions: {
    /** "More" in the call's toolbar, whose menu has the captions items. */
    moreButton: '#callingButtons-showMoreBtn, [role="toolbar"] button[aria-label="More"]',
    /** A toolbar's own captions button, where a build has one. */
    captionsButton: "#closed-captions-button",
    /** Signed in, captions are under this submenu. */
    languageMenuTexts: ["Language and speech"],
    /**
     * "Show live captions"; an anonymous guest's item is a checkbox "Captions" (`aria-checked`).
     * Disabled (`aria-disabled`) where the host or tenant switched captions off.
     */
    showItemTexts: ["Show live captions", "Captions"],
    shownItemTexts: ["Hide live captions"],
    region: '[data-tid="closed-caption-renderer-wrapper"]',
    /** One entry per speaker turn, growing word by word in place. */
    entry: ".fui-ChatMessageCompact",
    text: '[data-tid="closed-caption-text"]',
    /** Paired with the text by document order. */
    speakerName: '[data-tid="author"]',
    selfTexts: [],
  },
  /**
   * More → "Turn off incoming video" (the user's own view; "Turn on incoming video" once off):
   * from public help pages on the Teams client, not confirmed against a web client build.
   */
  incomingVideo: {
    /** The toolbar's More button (the captions' one). */
    menuButtons: ['#callingButtons-showMoreBtn, [role="toolbar"] button[aria-label="More"]'],
    offItemTexts: ["Turn off incoming video"],
    offAlreadyTexts: ["Turn on incoming video"],
  },
  chat: {
    /** Shows the meeting chat pane, which receives messages only while it shows. Absent for a guest without chat. */
    openButton: "button#chat-button",
    openedButton: '[aria-pressed="true"], [aria-expanded="true"]',
    composer:
      '[contenteditable="true"][aria-label="Type a message"], [data-tid="ckeditor"][contenteditable="true"]',
    sendButton: 'button[aria-label="Send"]',
    tipDismissTexts: [],
    message: '[data-tid="chat-pane-message"]',
    text: '[data-tid="messageBodyContent"]',
    /** On the first of a run of someone else's messages only, inside it. */
    sender: '[data-tid="message-author-name"]',
    /** Not confirmed from a public source: the class of the user's own messages. */
    ownMessage: ".fui-ChatMyMessage",
    ownWhenNoSender: false,
    selfTexts: [],
    /** Not confirmed from a public source: the message id attribute. */
    messageIdAttributes: ["data-mid"],
  },
};
