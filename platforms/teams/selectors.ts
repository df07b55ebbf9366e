/**
 * Every Microsoft Teams hook the bot relies on, in one place: when Teams changes its web client,
 * this is the file to fix. Sources: the hooks public meeting bots depend on
 * (shared/notes/platform-hooks.md), plus the texts and attributes noted per entry.
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
  call: {
    /**
     * Trap: the hang-up button is in the lobby's toolbar too, so it never proves admission on
     * its own; in_call also needs one of `callOnly` below. Ids and data-tid vary by build.
     */
    hangup: '#hangup-button, button[data-tid="hangup-main-btn"], [data-inp="hangup-button"]',
    /** Only rendered once admitted: the People button, the roster, the stage's video tiles. */
    callOnly: [
      "#roster-button",
      'button[data-tid="calling-toolbar-people-button"]',
      '[aria-label="People"] [role="tree"]',
      '[data-cid="calling-participant-stream"]',
    ],
    /**
     * The roster: the People panel holds a tree whose items are `participantsInCall-<id>`; the
     * suffix is the stable id (on the real site an id or address, sometimes the display name).
     * On the real site the tree may only be rendered while the panel is open (see `stageTile`).
     */
    rosterTree: '[aria-label="People"] [role="tree"]',
    rosterItem: '[data-tid^="participantsInCall-"]',
    rosterItemPrefix: "participantsInCall-",
    /** The clean display name; the item's text also carries "(You)", "(Unverified)", roles. */
    rosterName: "span[title]",
    /** How Teams marks the user's own roster entry. */
    selfMarkers: ["(You)"],
    /**
     * Video tiles on the stage: `data-tid` holds the same id as the roster item's suffix. They
     * name the others when the roster is not rendered, and carry the speaking indicator.
     */
    stageTile: '[data-cid="calling-participant-stream"]',
    tileName: '[data-tid="participant-info-nametag"]',
    /** Teams draws the speaking ring on this outline by giving it the class below. */
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
    /** The captcha Teams shows a suspected bot (attendee-labs/attendee, teams_ui_methods.py). */
    blocked: ["Verify you're a real person"],
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
