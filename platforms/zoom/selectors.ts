import type { SignInHooks } from "../adapter.js";

/**
 * Every Zoom web client hook the bot relies on, in one place: when Zoom changes its UI, this is
 * the file to fix. The React client at https://app.zoom.us/wc/<id>/join. Sources: the hooks
 * public meeting bots depend on (docs/notes/platform-hooks.md), Zoom's developer forum for
 * "Passcode wrong", and public bots' Zoom selector files for the labels noted below.
 *
 * Texts are matched case-insensitively as substrings of the page's rendered text.
 */
export const ZOOM_HOOKS = {
  // ---- pre-join -------------------------------------------------------------------------------
  /**
   * OneTrust cookie banner; it can cover the form's lower part. Trap: it can also be covered
   * itself (the permission dialog's overlay drawn over it), so it is clicked only once on top:
   * see clickFirstClickable.
   */
  cookieAccept: "#onetrust-accept-btn-handler",
  /** Terms of Service dialog ("I Agree"); shown before the form is usable, on a first visit. */
  termsAgree: "#wc_agree1",
  /**
   * The microphone/camera permission dialog, in the order the bot prefers: "Allow" lets the
   * client offer computer audio (Chromium's fake devices answer; the bot mutes right after).
   */
  permissionButtonTexts: ["Allow", "Continue without microphone and camera"],
  /**
   * The name field: the React client's `#input-for-name`, the classic client's (`/wc/join/<id>`)
   * `#inputname[placeholder="Your Name"]`, matched by id alone: a placeholder is display text.
   */
  nameInput: "#input-for-name, #inputname",
  /**
   * Shown when the link carries no `pwd`. Trap: a passcode field alone is a normal pre-join form;
   * only Zoom's "Passcode wrong" says the passcode was refused.
   */
  passcodeInput: 'input[placeholder*="passcode" i], #input-for-pwd',
  /** Preview toggles are labelled with their action: "Mute" while the microphone is on. */
  previewMicrophone: "#preview-audio-control-button",
  previewMicrophoneOnLabel: "Mute",
  previewCamera: "#preview-video-control-button",
  previewCameraOnLabel: "Stop Video",
  previewCameraOffLabel: "Start Video",
  /**
   * The React client's Join, the classic client's `#joinBtn`. Trap: the button is in the DOM before
   * it works; it is `disabled` (class or attribute) until a name is typed. Trap: a toast can lie
   * over it for a moment; the click waits for it rather than clicking through.
   */
  joinButton: "button.zm-btn.preview-join-button, #joinBtn",
  joinButtonReady:
    "button.zm-btn.preview-join-button:not(.disabled):not([disabled]), #joinBtn:not(.disabled):not([disabled])",

  /**
   * Signed in, the name field comes filled with the account's name, or is absent. Not confirmed
   * from a public source: the signed-in account's label, "Signed in as <name> (<email>)", which
   * is what proves the pre-join signed in (a guest's field can be filled from an earlier visit).
   */
  accountLabel: '[aria-label^="Signed in as "]',
  accountLabelPattern: "^Signed in as\\s+([\\s\\S]*?)\\s*\\(([^()\\s]+@[^()\\s]+)\\)\\s*$",
  /** Zoom's sign-in page (app.zoom.us/signin), where a meeting for signed-in users sends guests. */
  signInPathPattern: "^/signin(/|$)",

  // ---- in the call ----------------------------------------------------------------------------
  /** The audio dialog after admission; until it is answered the meeting is silent. */
  joinAudioButton: "button.join-audio-by-voip__join-btn",
  joinAudioText: "Join Audio by Computer",
  /**
   * Admission is judged by the call's footer and its participants button, which the waiting
   * screens do not have. Trap: `button[aria-label="Leave"]` is not proof: the waiting screens
   * have a Leave control too. The button's label is "open the participants list pane,[N]
   * particpants" (Zoom's typo), "…manage participants…" for a host, "close…" while open.
   */
  footer: "#wc-footer",
  participantsButton:
    '#wc-footer button[aria-label*="participants list"], #wc-footer button[aria-label*="participants pane"]',
  /**
   * A roster entry's name, found wherever the roster is rendered. Trap: the panel's container is
   * not stable (`#participants-ul` in `#wc-container-right`, other builds a floating window with
   * another structure), so entries are found by their own hook, not inside one container. The
   * roster exists only while the panel is open: the bot opens it when no entry is on the page
   * (never blindly: the same button closes an open panel), and the snapshot falls back to the
   * video tiles while it is closed.
   */
  participantName: ".participants-item__display-name",
  /**
   * The entry around a name, where its tag is: the item's layout in any build, the `li` in the
   * panel's list.
   */
  participantItem: ".participants-item__item-layout, li.participants-li",
  /**
   * The entry's tag: "(Me)", "(Host, me)", "(Host)", "(Guest)". Trap: the items have no
   * per-person id (their `participants-list-N` ids are positions), so ids are derived from names.
   */
  participantTag: ".participants-item__name-label",
  /**
   * The tag of the bot's own entry. Trap: only the tag element counts, never the name: anyone can
   * be called "Eve (Me)", or take the bot's very name.
   */
  selfLabelPattern: "\\bme\\b",
  /**
   * The kinds of video tile, each with a name tag: gallery tiles, the speaker view's filmstrip,
   * its big speaker frame. Trap: none says which tile is the user's own (the bot's tile is among
   * them, named like the bot), and the speaker view can show one person in two kinds at once.
   */
  videoTileKinds: [
    ".gallery-video-container__video-frame",
    ".speaker-bar-container__video-frame",
    ".speaker-active-container__video-frame",
  ],
  videoTileName: ".video-avatar__avatar-footer",
  /**
   * Zoom's active-speaker mark: the tile's frame gets `--active` (a green inset frame). Trap: in
   * gallery view it is only shown when more than two are in the call, and the big speaker frame
   * also shows a pinned or last speaker, so it is not used for speaking.
   */
  activeSpeakerTile:
    ".gallery-video-container__video-frame--active, .speaker-bar-container__video-frame--active",
  leaveButton: 'button[aria-label="Leave"]',
  leaveConfirm: "button.leave-meeting-options__btn--danger",

  // ---- how it ends --------------------------------------------------------------------------
  /**
   * Trap: the end and removal dialogs are drawn over the call, whose footer stays underneath,
   * so they are checked before the in-call hooks.
   */
  endedDialog: 'div[aria-label="Meeting is end now"]',
  endedDialogButton: 'div[aria-label="Meeting is end now"] button',
  /**
   * The removal dialog. Removing someone from the waiting room is Zoom's way of denying them;
   * with no call underneath (no footer) the same dialog means "denied".
   */
  removedDialog: 'div[aria-label="You have been removed"]',
  texts: {
    waitingRoom: [
      "Please wait, the meeting host will let you in soon",
      "Host has joined. We've let them know you're here",
      "Host has joined. We’ve let them know you’re here",
    ],
    /** Trap: this screen says "sign in to start this meeting" to the host; it is no sign-in wall. */
    hostNotStarted: ["Waiting for the host to start this meeting"],
    /** Zoom's own wording (devforum.zoom.us "Passcode Wrong" error), shown with the passcode box. */
    badPasscode: ["Passcode wrong"],
    /**
     * Error 3001 ("meeting does not exist"), page title "Error - Zoom". One public bot reports
     * this page for a meeting whose host has not started it; Zoom's code says it does not exist.
     */
    notFound: ["This meeting link is invalid (3,001)", "Invalid meeting ID"],
    /**
     * The bot wall (2026: "…must use Zoom RTMS", either apostrophe) and its image captcha:
     * BOT_BLOCKED, never solved. Trap: a reCAPTCHA frame alone proves nothing, the normal join
     * page can carry an invisible one; and the wall's own "sign in to join the meeting" is no
     * sign-in wall (it is checked first).
     */
    botWall: [
      "We detected you may be a bot",
      "Automated bots aren't allowed to join",
      "Automated bots aren’t allowed to join",
      "Type the characters you see",
    ],
    /** A meeting for signed-in (or authorized) users only, to a guest: SIGN_IN_REQUIRED. */
    signIn: [
      "This meeting is for authorized attendees only",
      "This meeting is for authorized participants only",
      "Sign in to join this meeting",
      "requires authentication on the commercial Zoom platform",
    ],
    denied: ["removed you from the waiting room"],
    ended: ["This meeting has been ended by host"],
    removed: ["You have been removed"],
    /** Not confirmed from a public source; the mock shows it after "Leave Meeting". */
    left: ["You have left the meeting"],
  },
};

/**
 * Signing a bot account in once (`meetbot login zoom`): Zoom's sign-in page, and the cookies that
 * prove a sign-in (`_zm_ssid`, `cred`, `_zm_mtk_guid` are set before any sign-in: never them).
 */
export const ZOOM_SIGN_IN: SignInHooks = {
  url: "https://zoom.us/signin",
  cookieDomain: "zoom.us",
  sessionCookies: ["zm_aid", "zm_haid"],
};

/**
 * Captions and chat (docs/notes/live-meeting.md; read by platforms/live.ts, clicked by
 * captions.ts and chat.ts): when Zoom changes them, this is the file to fix.
 */
export const ZOOM_LIVE_HOOKS = {
  /**
   * The footer's audio button, labelled "mute my microphone" / "unmute my microphone" (public
   * scripts that drive the web client). The host's notices: not confirmed from a public source.
   */
  microphone: {
    onButton: 'button[aria-label="mute my microphone" i]',
    offButton: 'button[aria-label="unmute my microphone" i]',
    hostMutedPattern: "host (has )?muted you|cannot unmute yourself",
  },
  /**
   * The footer's video button, labelled "stop my video" / "start my video" as the audio one is
   * (not confirmed from a public source; the preview's are "Stop Video" / "Start Video").
   */
  camera: {
    onButton: 'button[aria-label="stop my video" i]',
    offButton: 'button[aria-label="start my video" i]',
  },
  /**
   * "Stop Incoming Video" (Zoom's "Stop incoming video" feature, the user's own view; "Start
   * Incoming Video" once off): support.zoom.com "Stopping all incoming video in a meeting or
   * webinar" lists the web client, with the feature enabled in the account's In Meeting
   * (Advanced) settings (without it there is no item). The desktop client has it in the top-right
   * View menu; the web client's place (the footer's More, or View) and its exact capitals are not
   * confirmed from a public source, so both menus are tried.
   */
  incomingVideo: {
    menuButtons: [
      '#wc-footer button[aria-label="More meeting control"], #wc-footer button[aria-label="More"]',
      'button[aria-label="View"]',
    ],
    offItemTexts: ["Stop Incoming Video", "Stop incoming video"],
    offAlreadyTexts: ["Start Incoming Video", "Start incoming video"],
  },
  captions: {
    /** The footer's More button; not confirmed from a public source: its label "More meeting control". */
    moreButton: '#wc-footer button[aria-label="More meeting control"], #wc-footer button[aria-label="More"]',
    /**
     * Menu items that turn captions on ("Captions"; some builds open a submenu first, so a public
     * bot clicks twice) or show them again, the most specific first. None where the host has not
     * enabled captions.
     */
    showItemTexts: ["Show Captions", "Captions"],
    /** The item once captions are shown: nothing to do. */
    shownItemTexts: ["Hide Captions"],
    region: "#live-transcription-subtitle",
    /** One line per speaker turn. */
    entry: ".live-transcription-subtitle__item",
    /**
     * The line's words. Not confirmed from a public source: the text's own class; without it the
     * line is read whole, less its avatar's initials.
     */
    text: ".live-transcription-subtitle__text, .live-transcription-subtitle__item",
    /**
     * No name is printed: the speaker is this avatar, the same picture (or initials on the same
     * colour) as their participants-list entry's.
     */
    speakerAvatar: ".zmu-caption-speaker-icon",
    selfTexts: [],
    roster: {
      name: ".participants-item__display-name",
      item: ".participants-item__item-layout, li.participants-li",
      avatar: ".participants-item__avatar",
      tag: ".participants-item__name-label",
      selfTagPattern: "\\bme\\b",
    },
  },
  chat: {
    /** "open the chat panel"; the same button reads "close the chat panel" while it is open. */
    openButton: '#wc-footer button[aria-label*="chat panel" i]',
    openedButton: '[aria-label*="close" i]',
    /** A ProseMirror editor. */
    composer: '.chat-rtf-box__editor-outer [contenteditable="true"]',
    sendButton: 'button[aria-label="send"]',
    /** A guest's "chatting as guest" tip covers the composer (not editable) until "Got it". */
    tipDismissTexts: ["Got it"],
    message: '.new-chat-message__container, [id^="chat-message-"]',
    text: ".new-chat-message__content",
    /** Over a run of one sender's messages; not confirmed from a public source: "Me" over the user's own. */
    sender: ".chat-item__sender",
    ownWhenNoSender: false,
    selfTexts: ["Me"],
    /** The element id `chat-message-<UUID>`. */
    messageIdAttributes: ["id"],
  },
};
