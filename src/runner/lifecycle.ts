import { EventEmitter } from "node:events";
import { join } from "node:path";
import type { Logger } from "pino";
import {
  END_PHASES,
  FAILURE_PHASES,
  JoinRefused,
  type JoinNote,
  type PageSnapshot,
  LEAVE_TIMEOUT_MS,
  type Phase,
  type PlatformAdapter,
  WAITING_PHASES,
} from "../../platforms/adapter.js";
import {
  type AccountCheckReport,
  type BotConfig,
  type PendingCommand,
  SCREENSHOT_ARTIFACT,
  type ScreenshotResult,
  type StorageState,
  type SubCode,
} from "../core/index.js";
import { AgentStream } from "./agent-stream/index.js";
import { CommandRefusal } from "./commands.js";
import { BotFailure } from "./errors.js";
import { LiveMeeting } from "./live-meeting/index.js";
import { BotVoice } from "./voice/bot-voice.js";
import { BotCamera } from "./camera/bot-camera.js";
import { RecordingClock } from "./recording-clock.js";
import { RecordingPause } from "./recording-pause.js";
import { SpeakerTimeline } from "./live-transcript/speakers.js";
import type { LiveTranscriber, LiveTranscriptContext } from "./live-transcript/types.js";
import { type PageWatcher, PhaseTimeout } from "./page-watcher.js";
import type { LifecyclePorts, RecorderPort, ReporterPort, StagePort } from "./ports.js";
import type { RecordingResult } from "./recorder.js";
import type { AudioLevels } from "./silence.js";
import { watchCall } from "./watch-call.js";

const PAGE_LOAD_TIMEOUT_MS = 30_000;
const JOIN_RESPONSE_TIMEOUT_MS = 30_000;
/** The longest the adapter's join form may take: a wall that shows meanwhile ends it at once. */
const JOIN_FORM_TIMEOUT_MS = 120_000;
/** How long a signed-in bot's pre-join form may take to show the account before it counts as signed out. */
const SIGNED_IN_SHOWN_MS = 5_000;

/** The account the pre-join showed, once the bot is signed in. */
type SignedInAs = NonNullable<PageSnapshot["account"]>;

/** Why the runner was asked to stop (SIGTERM/SIGINT): not a failure of the bot. */
export class StopRequested extends Error {
  constructor() {
    super("stop requested");
  }
}

export type Outcome = { status: "DONE" } | { status: "FATAL"; subCode: SubCode; message: string };

/**
 * One bot's life, start to finish: media environment, browser, join, admission, call,
 * recording, upload, and the status reports along the way. It never throws: every path ends in
 * DONE or FATAL, with whatever was recorded finalized and uploaded. Everything outside it (the
 * browser stage, the recorder, the reporter, the uploader) comes through its ports.
 */
export class BotLifecycle {
  private readonly interrupt = new AbortController();
  private stage: StagePort | null = null;
  private recorder: RecorderPort | null = null;
  /** The live transcript (BotConfig.liveTranscript), from the recording's start to the call's end. */
  private live: LiveTranscriber | null = null;
  /** What the live transcript's sources are started with (set once the recording runs). */
  private liveContext: LiveTranscriptContext | null = null;
  /** Set when the call ends: no live transcript starts after that. */
  private liveStopping = false;
  /** The recorded sound's level, from the recorder to the silence clock. */
  private readonly levels: AudioLevels = new EventEmitter();
  private readonly reporter: LifecyclePorts["reporter"];
  /** Set once the pre-join showed the login's account: the bot is signed in. */
  private signedInAs: SignedInAs | null = null;
  /** The browser's session when the call ended, to write back before the last status report. */
  private sessionToWriteBack: StorageState | null = null;
  /** Set while the bot is in the call: settles when the call has ended (CALL_ENDED, or a failure). */
  private callEnded: Deferred | null = null;
  /** Captions and chat while in the call (live-meeting/). */
  private liveMeeting: LiveMeeting | null = null;
  /** The bot's voice while in the call (voice/): the sounds of play_audio commands. */
  private voice: BotVoice | null = null;
  /** The live audio channel to an agent (BotConfig.audioStream) while in the call. */
  private agentStream: AgentStream | null = null;
  /** Pausing and resuming the recording while in the call (once it runs). */
  private recordingPause: RecordingPause | null = null;
  /**
   * Settles once the voice exists (the recording runs: the bot's turns are on its clock) or the
   * call ended; the recording's pause waits for it too.
   */
  private voiceReady = deferred();
  /** The bot's camera while in the call (camera/): the pictures of show_image commands. */
  private camera: BotCamera | null = null;
  /** Set once the bot option output.image is on the page's camera: the bot joins with it on. */
  private showsPicture = false;
  private lastStatus = "not started";

  constructor(
    private readonly config: BotConfig,
    private readonly workDir: string,
    private readonly adapter: PlatformAdapter,
    private readonly ports: LifecyclePorts,
    private readonly log: Logger,
  ) {
    this.reporter = ports.reporter;
  }

  /** Asks the bot to leave now; the run still finalizes, uploads and reports. */
  requestStop(): void {
    if (!this.interrupt.signal.aborted) this.interrupt.abort(new StopRequested());
  }

  /**
   * Runs a command from the control plane (commands.ts). `leave`: the bot leaves the call as on
   * a stop request, and the command is done once CALL_ENDED is reported (the upload follows).
   */
  async handleCommand(command: PendingCommand): Promise<Record<string, unknown> | undefined> {
    switch (command.kind) {
      case "leave": {
        const ended = this.callEnded;
        if (!ended)
          throw new CommandRefusal("NOT_IN_CALL", `the bot is not in the call (${this.lastStatus})`);
        this.log.info({ commandId: command.commandId }, "leaving the call on request");
        this.requestStop();
        await ended.promise;
        return undefined;
      }
      case "chat": {
        if (!this.callEnded || !this.liveMeeting)
          throw new CommandRefusal("NOT_IN_CALL", `the bot is not in the call (${this.lastStatus})`);
        return this.liveMeeting.sendChat(command.payload);
      }
      case "play_audio":
      case "stop_audio": {
        if (this.callEnded) await this.voiceReady.promise.catch(() => {});
        const voice = this.callEnded ? this.voice : null;
        if (!voice)
          throw new CommandRefusal("NOT_IN_CALL", `the bot is not in the call (${this.lastStatus})`);
        if (command.kind === "stop_audio") return voice.stop(command.commandId);
        return voice.play(command.commandId, command.payload);
      }
      case "show_image":
      case "hide_image": {
        const camera = this.callEnded ? this.camera : null;
        if (!camera)
          throw new CommandRefusal("NOT_IN_CALL", `the bot is not in the call (${this.lastStatus})`);
        return command.kind === "show_image" ? camera.show(command.payload) : camera.hide();
      }
      case "pause_recording":
      case "resume_recording": {
        if (this.callEnded) await this.voiceReady.promise.catch(() => {});
        const pause = this.callEnded && !this.liveStopping ? this.recordingPause : null;
        if (!pause)
          throw new CommandRefusal("NOT_IN_CALL", `the bot is not recording a call (${this.lastStatus})`);
        return command.kind === "pause_recording" ? pause.pause() : pause.resume();
      }
      case "screenshot":
        return this.screenshot();
      default:
        throw new CommandRefusal(
          "UNKNOWN_COMMAND",
          `this runner does not know the command "${command.kind}"`,
        );
    }
  }

  /**
   * What the page shows now, as the artifact SCREENSHOT_ARTIFACT (replacing the one before):
   * from the moment the browser opened the meeting until the bot leaves, the lobby included.
   */
  private async screenshot(): Promise<ScreenshotResult> {
    const stage = this.stage;
    if (!stage || this.liveStopping)
      throw new CommandRefusal("NOT_IN_CALL", `the bot has no meeting page (${this.lastStatus})`);
    const path = join(this.workDir, SCREENSHOT_ARTIFACT);
    const takenAt = new Date().toISOString();
    const { sizeBytes } = await stage.screenshot(path);
    await this.ports.uploader.uploadArtifact(SCREENSHOT_ARTIFACT, path);
    return { artifact: SCREENSHOT_ARTIFACT, sizeBytes, takenAt };
  }

  async run(): Promise<Outcome> {
    try {
      const endedBy = await this.joinAndAttend();
      await this.finishRecording();
      await this.writeBackSession();
      this.reporter.report({ type: "status", data: { status: "DONE" } });
      this.log.info({ endedBy }, "done");
      return { status: "DONE" };
    } catch (error) {
      // `await`, so that the failure is handled (screenshot, partial upload) before cleanUp closes the browser.
      return await this.fail(error);
    } finally {
      await this.cleanUp();
    }
  }

  /**
   * An account check (BotConfig.accountCheck): the login's session goes into the browser, the
   * meeting is opened, and the pre-join must show the account, exactly as for a signed-in bot
   * before its join form (confirmSignedIn); nothing is clicked and no bot event is sent. Answers
   * what to report: signed in (with the account's name and e-mail as shown, and the browser's
   * session after the visit: platforms rotate cookies), signed out (SESSION_EXPIRED's reason), or
   * a failure that says nothing about the session. Never throws.
   */
  async check(): Promise<AccountCheckReport> {
    try {
      const stage = await this.ports.prepareStage();
      this.stage = stage;
      stage.onCrash((what) => this.interrupt.abort(new BotFailure("BROWSER_CRASHED", what)));
      const watcher = await stage.watch(this.adapter.snapshot, {
        ...this.adapter.hooks,
        selfName: this.config.botDisplayName,
      });
      watcher.on("change", ({ phase, evidence }) => this.log.info({ phase, evidence }, "page phase"));
      const login = this.config.login as NonNullable<BotConfig["login"]>;
      await stage.restoreSession(login.session);
      this.log.info(
        { accountId: login.accountId, cookies: login.session.cookies.length },
        "login session restored",
      );
      await this.open(stage);
      const waiting = Object.keys(WAITING_PHASES) as Phase[];
      try {
        await this.waitFor(watcher, ["prejoin", ...waiting, "in_call"], PAGE_LOAD_TIMEOUT_MS, "JOIN_FAILED");
      } catch (error) {
        if (error instanceof BotFailure && error.subCode === "SIGN_IN_REQUIRED") {
          throw this.sessionExpired(`the meeting page asks for a sign-in (${error.message})`);
        }
        throw error;
      }
      if (watcher.current.phase !== "prejoin") {
        throw this.sessionExpired(`the page went to "${watcher.current.phase}" without a signed-in pre-join`);
      }
      await this.confirmSignedIn(watcher);
      let session: StorageState | undefined;
      try {
        session = await stage.sessionState();
      } catch (error) {
        this.log.warn({ err: (error as Error).message }, "could not read the session to write it back");
      }
      const shown = this.signedInAs;
      return {
        signedIn: true,
        accountName: shown?.name ?? null,
        accountEmail: shown?.email ?? null,
        ...(session ? { session } : {}),
      };
    } catch (error) {
      const reason = error instanceof StopRequested ? this.interrupt.signal.reason : error;
      const message = this.redact(reason instanceof Error ? reason.message : String(reason)).slice(0, 2000);
      if (reason instanceof BotFailure && reason.subCode === "SESSION_EXPIRED") {
        this.log.info({ reason: message }, "account check: not signed in");
        return { signedIn: false, reason: message };
      }
      this.log.error({ err: message }, "account check failed");
      return { signedIn: false, failure: message };
    } finally {
      await this.cleanUp();
    }
  }

  private async joinAndAttend(): Promise<SubCode> {
    const { recording } = this.config;
    const stage = await this.ports.prepareStage();
    this.stage = stage;
    const { page } = stage;
    // A trace of the join, kept only if the bot fails; never with a secret in the browser (a
    // trace records cookies, storage and the URLs opened).
    if (!this.config.login && !this.config.teamsBotToken) await stage.startTrace();
    stage.onCrash((what) => this.interrupt.abort(new BotFailure("BROWSER_CRASHED", what)));
    const watcher = await stage.watch(this.adapter.snapshot, {
      ...this.adapter.hooks,
      selfName: this.config.botDisplayName,
    });
    // Which hook decided each phase, and which variant of each join hook matched: a UI change on
    // a real platform shows here before joins fail.
    let lastPhase: Phase | undefined;
    watcher.on("change", ({ phase, evidence }) => {
      if (phase !== lastPhase) this.log.info({ phase, evidence }, "page phase");
      lastPhase = phase;
    });
    const note = (hook: string, variant: string) => this.log.info({ hook, variant }, "join hook matched");

    this.status("JOINING_CALL");
    await this.loadPicture(stage);
    const login = this.config.login;
    if (login?.mode === "always") {
      await this.signIn(stage, watcher, note);
    } else {
      await this.open(stage);
      try {
        await this.getIn(watcher, page, note, false);
      } catch (error) {
        // only_if_required: a meeting that refuses anonymous guests gets one more try, signed in.
        const refused = error instanceof BotFailure && error.subCode === "SIGN_IN_REQUIRED";
        if (!(login && refused)) throw error;
        this.announce(
          `the meeting refuses anonymous guests (${error.message}); trying again signed in with account ${login.accountId}`,
        );
        await this.signIn(stage, watcher, note);
      }
    }

    this.status("IN_CALL", undefined, this.joinedAs());
    this.callEnded = deferred();
    this.camera = new BotCamera({
      page,
      hooks: this.adapter.live?.camera ?? null,
      picture: stage.camera,
      fetchImage: (imageId) => this.ports.fetchImage(imageId),
      log: this.log.child({ component: "camera" }),
      note: (hook, variant) => this.log.info({ hook, variant }, "live hook matched"),
    });
    // Captions and chat (live-meeting/index.ts): ready for chat commands now, started below.
    this.liveMeeting = new LiveMeeting({
      page,
      adapter: this.adapter,
      config: this.config,
      watcher,
      selfName: this.joinedAs(),
      report: (body) => this.reporter.report(body),
      log: this.log,
      // Captions cannot be turned on (unavailable is reported already).
      onCaptionsUnavailable: (reason) => this.fallBackFromCaptions(reason),
    });
    // The recording starts at once; opening the roster (which a toast or a slow page can hold up
    // for seconds) goes on beside it, and the call is watched once the roster is as open as it gets.
    const afterAdmission = Promise.resolve(this.adapter.afterAdmission?.(page, { note })).catch(
      (error: Error) => {
        this.log.warn({ err: error.message }, "after-admission step failed; the roster may be incomplete");
      },
    );
    this.recorder = stage.recorder(join(this.workDir, "recording.mp4"), {
      onFailure: (failure) => this.interrupt.abort(failure),
      onLevel: (dbfs) => this.levels.emit("level", dbfs),
    });
    const startedAt = await this.recorder.start();
    this.reporter.report({
      type: "recording.started",
      data: { ...recording, startedAt: startedAt.toISOString() },
    });
    const clock = new RecordingClock(startedAt);
    this.recordingPause = new RecordingPause({
      clock,
      recorder: this.recorder,
      report: (body) => this.reporter.report(body),
      onFailure: (failure) => this.interrupt.abort(failure),
      log: this.log,
    });
    const reporter = this.tapForAgent(this.startLiveTranscript(stage, clock));
    this.voice = new BotVoice({
      page,
      microphone: this.adapter.live?.microphone ?? null,
      fetchClip: (clipId) => this.ports.fetchClip(clipId),
      playClip: (path, signal) => stage.playClip(path, signal),
      selfName: this.joinedAs(),
      // With an audio stream the microphone is on for the whole call (agent-stream/).
      keepMicOn: this.config.output.keepMicOn === true || this.agentStream !== null,
      liveTranscript: this.config.liveTranscript ?? null,
      recordingClock: () => clock.now(),
      recordingPaused: () => clock.paused,
      // Through the live transcript's reporter: the bot's turns name it in the live transcript too.
      report: (body) => reporter.report(body),
      log: this.log.child({ component: "voice" }),
      note: (hook, variant) => this.log.info({ hook, variant }, "live hook matched"),
    });
    this.voiceReady.resolve();
    await afterAdmission;
    // The call is watched from now on, while the steps below click through the page's menus
    // (seconds, for an audio-only bot's incoming video): who joins or leaves meanwhile, and an
    // end, are seen when they happen, not once the menus are done.
    const watching = watchCall({
      watcher,
      reporter,
      automaticLeave: this.config.automaticLeave,
      levels: this.levels,
      signal: this.interrupt.signal,
      log: this.log,
      recordingNow: () => clock.now(),
    });
    let watchEnded = false;
    const ended = () => {
      watchEnded = true;
    };
    watching.then(ended, ended);
    // A stop asked meanwhile (a leave command) ends the watch a few ticks later: the live meeting
    // must not start opening panels while the bot clicks Leave.
    const callOver = () => watchEnded || this.interrupt.signal.aborted;
    // Before the captions, which may use the same menus: one step at a time.
    if (!recording.video) await this.turnOffIncomingVideo(page);
    if (this.showsPicture && !callOver()) await this.camera.ensureOn();
    if (!callOver()) {
      this.liveMeeting.start(clock);
      this.agentStream?.start();
    }
    const endedBy = await watching;
    // Every utterance's final goes out before CALL_ENDED; the bot says nothing more.
    this.voice.end();
    this.camera.end();
    await this.agentStream?.stop();
    await this.liveMeeting.stop();
    // What follows is not the meeting's sound: the live transcript stops listening now and
    // settles its last utterance while the bot leaves; its finals come before DONE.
    this.liveStopping = true;
    const liveSettled = this.live?.stop();
    if (!(endedBy in END_PHASES_BY_CODE)) {
      const notClicked = await this.adapter.leave(page);
      // A closed page (its browser crashed or was killed) has left the call already and will
      // never show it: no need to wait.
      if (!page.isClosed()) {
        const closed = new Promise<void>((resolve) => page.once("close", () => resolve()));
        const shownLeft = await Promise.race([
          watcher.waitForPhase(CALL_OVER_PHASES, LEAVE_TIMEOUT_MS),
          closed,
        ]).then(
          () => true,
          () => false,
        );
        // The browser closes next, which takes the bot out of the call all the same; the others
        // may have seen it drop rather than leave.
        if (!shownLeft) {
          this.log.warn(
            { timeoutMs: LEAVE_TIMEOUT_MS, phase: watcher.current.phase, leave: notClicked ?? "clicked" },
            "the page did not show the bot out of the call after its leave",
          );
        }
      }
    }
    this.status("CALL_ENDED", endedBy);
    this.endCall();
    await this.keepSession(stage);
    await liveSettled;
    return endedBy;
  }

  /**
   * An audio-only bot turns the other participants' video off where the platform has a switch
   * for it: nothing of it is recorded, so decoding it is waste. Best effort: a bot that cannot
   * still records the same sound, and says why in its log.
   */
  private async turnOffIncomingVideo(page: StagePort["page"]): Promise<void> {
    const turnOff = this.adapter.live?.turnOffIncomingVideo;
    if (!turnOff) return;
    const note = (hook: string, variant: string) => this.log.info({ hook, variant }, "live hook matched");
    const reason = await turnOff(page, { note });
    if (reason) this.log.warn({ reason }, "incoming video stays on");
    else this.log.info("incoming video turned off");
  }

  /**
   * The bot option output.image: the picture goes on the page's camera before the meeting is
   * opened, so the camera the page takes at pre-join shows it from its first frame, and the join
   * keeps the camera on. A picture that cannot be fetched is logged and reported, and the bot
   * joins as it would without one (camera off): a logo is not worth missing the meeting.
   */
  private async loadPicture(stage: StagePort): Promise<void> {
    const image = this.config.output.image;
    if (!image) return;
    try {
      await stage.camera.show(await this.ports.fetchImage(image.imageId));
      this.showsPicture = true;
      this.log.info(
        { imageId: image.imageId, width: image.width, height: image.height },
        "picture on the camera",
      );
    } catch (error) {
      this.announce(
        `the bot's picture (output.image) could not be loaded, so it joins with its camera off: ${(error as Error).message}`,
      );
    }
  }

  /**
   * Starts the live transcript when the bot has one; answers the reporter the call is watched
   * with, which also keeps the speaker events on the recording's clock, to name who said what.
   */
  private startLiveTranscript(stage: StagePort, clock: RecordingClock): ReporterPort {
    const options = this.config.liveTranscript;
    if (!options) return this.reporter;
    const speakers = new SpeakerTimeline(() => clock.now());
    this.liveContext = {
      options,
      clock,
      speakers,
      report: (body) => this.reporter.report(body),
      workDir: this.workDir,
      log: this.log,
    };
    // Captions are read by the live meeting (live-meeting/); the stage's sources are the others.
    if (options.source !== "captions") this.live = stage.startLiveTranscript(this.liveContext);
    return {
      report: (body) => {
        speakers.note(body);
        return this.reporter.report(body);
      },
    };
  }

  /**
   * With an audio stream (BotConfig.audioStream), makes the agent's stream and answers a reporter
   * that also tells it every event (speaker changes and the roster reach the agent from the same
   * reports the control plane gets: no second poller). Without one, `reporter` as it is.
   */
  private tapForAgent(reporter: ReporterPort): ReporterPort {
    const options = this.config.audioStream;
    const stage = this.stage;
    if (!options || !stage) return reporter;
    const tapped: ReporterPort = {
      report: (body) => {
        agent.noteEvent(body);
        return reporter.report(body);
      },
    };
    const agent = new AgentStream({
      botId: this.config.botId,
      options,
      audio: stage.agentAudio,
      page: stage.page,
      microphone: this.adapter.live?.microphone ?? null,
      selfName: this.joinedAs(),
      report: (body) => tapped.report(body),
      log: this.log.child({ component: "audio-stream" }),
      note: (hook, variant) => this.log.info({ hook, variant }, "live hook matched"),
    });
    this.agentStream = agent;
    return tapped;
  }

  /**
   * Captions could not be turned on: with liveTranscript.fallback the pocketsphinx live transcript
   * stands in (reporting `fallback`), unless the call is already ending.
   */
  private fallBackFromCaptions(reason: string): void {
    const context = this.liveContext;
    const fallback = this.config.liveTranscript?.fallback === true;
    this.log.info({ reason, fallback }, "captions unavailable");
    if (!fallback || !context || !this.stage || this.live || this.liveStopping) return;
    this.live = this.stage.startLiveTranscript(
      { ...context, options: { ...context.options, source: "pocketsphinx" } },
      "fallback",
    );
  }

  /**
   * Signed in: the login's session goes into the browser, the meeting is opened, and the pre-join
   * must show the account (no name field) before anything is clicked. A session that does not
   * sign in (a sign-in page, a guest's pre-join) ends the bot SESSION_EXPIRED: it never joins
   * signed out, and nothing is written back.
   */
  private async signIn(stage: StagePort, watcher: PageWatcher, note: JoinNote): Promise<void> {
    const login = this.config.login as NonNullable<BotConfig["login"]>;
    await stage.restoreSession(login.session);
    this.log.info(
      {
        accountId: login.accountId,
        cookies: login.session.cookies.length,
        origins: login.session.origins.length,
      },
      "login session restored",
    );
    // A reading of the page before this one (an anonymous try's wall) must not count.
    watcher.update({ phase: "loading", participants: [] });
    await this.open(stage);
    await this.getIn(watcher, stage.page, note, true);
  }

  /**
   * From the opened meeting page to the call: the pre-join (signed in, when `signedIn` says the
   * bot must be), the join form, admission. A wall that shows at any point ends it at once with
   * its subCode.
   */
  private async getIn(watcher: PageWatcher, page: StagePort["page"], note: JoinNote, signedIn: boolean) {
    const waiting = Object.keys(WAITING_PHASES) as Phase[];
    try {
      await this.waitFor(watcher, ["prejoin", ...waiting, "in_call"], PAGE_LOAD_TIMEOUT_MS, "JOIN_FAILED");
    } catch (error) {
      // Signed in, a sign-in page (or a wall meant for anonymous guests) means the session did not sign in.
      if (signedIn && error instanceof BotFailure && error.subCode === "SIGN_IN_REQUIRED") {
        throw this.sessionExpired(`the meeting page asks for a sign-in (${error.message})`);
      }
      throw error;
    }
    // Signed in, nothing is clicked before the pre-join shows the account: a page that skipped the
    // pre-join altogether proved nothing.
    if (signedIn && watcher.current.phase !== "prejoin") {
      throw this.sessionExpired(`the page went to "${watcher.current.phase}" without a signed-in pre-join`);
    }
    try {
      if (watcher.current.phase === "prejoin") {
        this.throwIfInterrupted();
        await this.joinForm(watcher, page, note, signedIn);
      }
      await this.admission(watcher);
    } catch (error) {
      // A denial answers a bot that waited to be let in, even when its lobby came and went between
      // two readings of a loaded page (a 1 s lobby on two starved cores did).
      const denied = error instanceof BotFailure && error.subCode === "ADMISSION_DENIED";
      if (denied && this.lastStatus !== "IN_WAITING_ROOM") this.status("IN_WAITING_ROOM");
      throw error;
    }
  }

  /**
   * The adapter's join form, raced against the walls: a wall that shows while the form is being
   * filled (a bot wall after "Join") ends the bot with its subCode at once, not when a step of the
   * form times out.
   */
  private async joinForm(watcher: PageWatcher, page: StagePort["page"], note: JoinNote, signedIn: boolean) {
    const failures = Object.keys(FAILURE_PHASES) as Phase[];
    const stopWatching = new AbortController();
    const wall = watcher
      .waitForPhase(
        failures,
        JOIN_FORM_TIMEOUT_MS,
        AbortSignal.any([stopWatching.signal, this.interrupt.signal]),
      )
      .then(
        (snap) => {
          throw this.wallFailure(snap.phase, signedIn);
        },
        () => new Promise<never>(() => {}),
      );
    const confirmSignedIn = () => this.confirmSignedIn(watcher);
    const form = this.adapter
      .join(page, {
        displayName: this.config.botDisplayName,
        info: this.config.meetingInfo,
        note,
        camera: this.showsPicture,
        ...(signedIn ? { confirmSignedIn } : {}),
      })
      .catch((error: Error) => {
        this.throwIfInterrupted();
        if (error instanceof BotFailure) throw error;
        // A wall that shows as the form fails is the reason, not the form's own error.
        if (FAILURE_PHASES[watcher.current.phase]) throw this.wallFailure(watcher.current.phase, signedIn);
        if (error instanceof JoinRefused) throw new BotFailure(error.subCode, error.message);
        throw new BotFailure(
          "JOIN_FAILED",
          `could not complete the join form: ${this.redact(error.message)}`,
        );
      });
    try {
      await Promise.race([form, wall]);
    } finally {
      stopWatching.abort();
      form.catch(() => {});
    }
  }

  /**
   * A wall's FATAL failure. Signed in but not yet confirmed so, a sign-in wall means the session
   * did not sign in: SESSION_EXPIRED.
   */
  private wallFailure(phase: Phase, signedIn: boolean): BotFailure {
    const subCode = FAILURE_PHASES[phase] as SubCode;
    const message = `the meeting page says: ${phase.replace("_", " ")}`;
    if (signedIn && !this.signedInAs && subCode === "SIGN_IN_REQUIRED") return this.sessionExpired(message);
    return new BotFailure(subCode, message);
  }

  /**
   * Called by the adapter once its pre-join form is on screen: resolves when the page shows the
   * login's account (it is then the name the bot joins as), rejects SESSION_EXPIRED when the page
   * asks for a sign-in or shows a guest's form (after SIGNED_IN_SHOWN_MS, for a page still
   * rendering its account control).
   */
  private async confirmSignedIn(watcher: PageWatcher): Promise<void> {
    const failures = Object.keys(FAILURE_PHASES) as Phase[];
    const snap = await watcher
      .waitUntil(
        (s) => (s.phase === "prejoin" && s.account !== undefined) || failures.includes(s.phase),
        SIGNED_IN_SHOWN_MS,
        this.interrupt.signal,
        ["prejoin"],
      )
      .catch((error: unknown) => {
        if (error instanceof PhaseTimeout) {
          throw this.sessionExpired(
            watcher.current.phase === "prejoin"
              ? "the pre-join shows no signed-in account (a guest's form)"
              : `the page stayed "${watcher.current.phase}" instead of a signed-in pre-join`,
          );
        }
        throw error;
      });
    if (snap.phase !== "prejoin" || !snap.account) throw this.wallFailure(snap.phase, true);
    this.signedInAs = snap.account;
    this.log.info({ accountName: snap.account.name, evidence: snap.evidence }, "signed in");
  }

  private sessionExpired(why: string): BotFailure {
    const accountId = this.config.login?.accountId;
    return new BotFailure(
      "SESSION_EXPIRED",
      `the session of account ${accountId} no longer signs in: ${why}`,
    );
  }

  /** The name the meeting shows for the bot: the account's own when signed in. */
  private joinedAs(): string {
    if (!this.signedInAs) return this.config.botDisplayName;
    return this.signedInAs.name ?? this.config.login?.accountName ?? this.config.botDisplayName;
  }

  /** Keeps the signed-in browser's session as the call ended, for the write-back. */
  private async keepSession(stage: StagePort): Promise<void> {
    if (!this.signedInAs) return;
    try {
      this.sessionToWriteBack = await stage.sessionState();
    } catch (error) {
      this.log.warn({ err: (error as Error).message }, "could not read the session to write it back");
    }
  }

  /**
   * Writes the signed-in session back (platforms rotate their cookies), before the last status
   * report. A failure is a warning: the bot's outcome stands.
   */
  private async writeBackSession(): Promise<void> {
    const session = this.sessionToWriteBack;
    if (!session) return;
    this.sessionToWriteBack = null;
    try {
      const kept = await this.ports.uploader.writeBackSession({
        session,
        accountName: this.signedInAs?.name ?? null,
        accountEmail: this.signedInAs?.email ?? null,
      });
      this.log.info({ kept, cookies: session.cookies.length }, "login session written back");
    } catch (error) {
      this.log.warn({ err: (error as Error).message }, "could not write the login session back");
    }
  }

  /** Says something the bot's owner should see, in its logs and as a log event. */
  private announce(message: string): void {
    this.log.info(message);
    this.reporter.report({ type: "log", data: { level: "info", message: message.slice(0, 4000) } });
  }

  /** `text` without the secrets of this bot's config (the Teams bot token, the session's values). */
  private redact(text: string): string {
    const secrets = [
      this.config.teamsBotToken,
      ...(this.config.login?.session.cookies.map((cookie) => cookie.value) ?? []),
    ].filter((secret): secret is string => typeof secret === "string" && secret.length >= 8);
    let out = text;
    for (const secret of secrets) {
      out = out.split(secret).join("[secret]");
      const encoded = encodeURIComponent(secret);
      if (encoded !== secret) out = out.split(encoded).join("[secret]");
    }
    return out;
  }

  private async open(stage: StagePort): Promise<void> {
    let url: string;
    try {
      url = this.adapter.meetingUrl(this.config.meetingInfo, this.config.platformUrls, {
        ...(this.config.teamsBotToken ? { botToken: this.config.teamsBotToken } : {}),
      });
    } catch (error) {
      throw new BotFailure(
        "MEETING_NOT_FOUND",
        `not a meeting this bot can open: ${this.redact((error as Error).message)}`,
      );
    }
    const shown = this.redact(url);
    try {
      const status = await stage.open(url, PAGE_LOAD_TIMEOUT_MS);
      if (status === 404) {
        throw new BotFailure("MEETING_NOT_FOUND", `the meeting page answered 404 (${shown})`);
      }
    } catch (error) {
      if (error instanceof BotFailure) throw error;
      this.throwIfInterrupted();
      throw new BotFailure(
        "JOIN_FAILED",
        `could not open ${shown}: ${this.redact((error as Error).message)}`,
      );
    }
  }

  /** From the click on "Ask to join" to being in the call, through the lobby if there is one. */
  private async admission(watcher: PageWatcher): Promise<void> {
    const waiting = Object.keys(WAITING_PHASES) as Phase[];
    await this.waitFor(watcher, [...waiting, "in_call"], JOIN_RESPONSE_TIMEOUT_MS, "JOIN_FAILED");
    if (watcher.current.phase === "in_call") return;
    this.status("IN_WAITING_ROOM");
    const timeout = this.config.automaticLeave.waitingRoomTimeout;
    try {
      await this.waitFor(watcher, ["in_call"], timeout, "WAITING_ROOM_TIMEOUT");
    } catch (error) {
      if (!(error instanceof BotFailure && error.subCode === "WAITING_ROOM_TIMEOUT")) throw error;
      // Waited too long: in a lobby that is WAITING_ROOM_TIMEOUT, for a host HOST_NOT_STARTED.
      const subCode = WAITING_PHASES[watcher.current.phase] ?? "WAITING_ROOM_TIMEOUT";
      const notClicked = await this.adapter.leave((this.stage as StagePort).page);
      if (notClicked)
        this.log.warn({ reason: notClicked }, "the bot could not leave the waiting room politely");
      throw new BotFailure(subCode, error.message);
    }
  }

  /**
   * Waits for one of `phases`; a failure phase on the way becomes its FATAL subCode, a timeout
   * becomes `onTimeout`, and an interrupt (SIGTERM, crash) is rethrown as is.
   */
  private async waitFor(watcher: PageWatcher, phases: Phase[], timeoutMs: number, onTimeout: SubCode) {
    const failures = Object.keys(FAILURE_PHASES) as Phase[];
    const ends = CALL_OVER_PHASES;
    try {
      const snap = await watcher.waitForPhase(
        [...phases, ...failures, ...ends],
        timeoutMs,
        this.interrupt.signal,
      );
      const failure = FAILURE_PHASES[snap.phase];
      if (failure) throw new BotFailure(failure, `the meeting page says: ${snap.phase.replace("_", " ")}`);
      if (ends.includes(snap.phase)) {
        throw new BotFailure("JOIN_FAILED", `the call ended before the bot got in (${snap.phase})`);
      }
      return snap;
    } catch (error) {
      if (error instanceof PhaseTimeout) throw new BotFailure(onTimeout, error.message);
      throw error;
    }
  }

  private async finishRecording(): Promise<void> {
    const result = await this.stopRecorder();
    if (!result) throw new BotFailure("RECORDING_FAILED", "the call ended without a recording");
    await this.upload(result);
  }

  private async stopRecorder(): Promise<RecordingResult | null> {
    const recorder = this.recorder;
    if (!recorder) return null;
    this.recorder = null;
    const result = await recorder.stop();
    this.reporter.report({
      type: "recording.stopped",
      data: {
        durationMs: result.durationMs,
        sizeBytes: result.sizeBytes,
        frames: result.frames,
        droppedFrames: result.droppedFrames,
        duplicatedFrames: result.duplicatedFrames,
      },
    });
    return result;
  }

  private async upload(result: RecordingResult): Promise<void> {
    try {
      await this.ports.uploader.uploadRecording(result);
    } catch (error) {
      throw new BotFailure("UPLOAD_FAILED", `recording kept at ${result.path}: ${(error as Error).message}`);
    }
  }

  private async fail(error: unknown): Promise<Outcome> {
    const reason = error instanceof StopRequested ? this.interrupt.signal.reason : error;
    const failure =
      reason instanceof BotFailure
        ? reason
        : reason instanceof StopRequested
          ? new BotFailure("KILLED", "stopped on request before the call started")
          : new BotFailure("INTERNAL_ERROR", (reason as Error)?.message ?? String(reason));
    const message = this.redact(failure.message);
    this.log.error({ subCode: failure.subCode, err: message }, "bot failed");
    this.endCall(new BotFailure(failure.subCode, message));
    const artifacts = await this.saveArtifacts();
    this.voice?.end();
    await this.agentStream?.stop();
    await this.liveMeeting?.stop();
    // Every utterance that had partials still gets its final before the bot ends.
    this.liveStopping = true;
    await this.live?.stop();
    // Whatever was recorded is still finalized and delivered.
    try {
      const result = await this.stopRecorder();
      if (result) await this.upload(result);
    } catch (uploadError) {
      this.log.error({ err: (uploadError as Error).message }, "could not deliver the partial recording");
    }
    // A signed-in browser's session is written back however the bot ended: after CALL_ENDED
    // (the upload failed, say), and before it (denied at the lobby, the wait timed out), since
    // the visit rotated its cookies and a session never written back dies a few visits later.
    if (this.signedInAs && !this.sessionToWriteBack && this.stage) await this.keepSession(this.stage);
    await this.writeBackSession();
    this.reporter.report({
      type: "status",
      data: {
        status: "FATAL",
        subCode: failure.subCode,
        message: message.slice(0, 2000),
        ...(artifacts.length > 0 ? { artifacts } : {}),
      },
    });
    return { status: "FATAL", subCode: failure.subCode, message };
  }

  /** Saves what the page showed and uploads it; returns the names the control plane has. */
  private async saveArtifacts(): Promise<string[]> {
    if (!this.stage) return [];
    const saved = await this.stage.saveFailureArtifacts(join(this.workDir, "artifacts"));
    const uploaded: string[] = [];
    for (const { name, path } of saved) {
      try {
        await this.ports.uploader.uploadArtifact(name, path);
        uploaded.push(name);
      } catch (error) {
        this.log.warn(
          { err: (error as Error).message, artifact: path },
          "failure artifact kept locally only",
        );
      }
    }
    return uploaded;
  }

  /** Never throws: the outcome is already decided and reported; cleanup trouble is only logged. */
  private async cleanUp(): Promise<void> {
    await this.live?.stop();
    await this.stage?.close().catch((error: Error) => {
      this.log.warn({ err: error.message }, "cleanup after the bot was incomplete");
    });
  }

  private status(
    status: "JOINING_CALL" | "IN_WAITING_ROOM" | "IN_CALL" | "CALL_ENDED",
    subCode?: SubCode,
    joinedAs?: string,
  ) {
    this.log.info({ status, subCode, joinedAs, uptimeMs: Math.round(process.uptime() * 1000) }, "status");
    this.lastStatus = status;
    this.reporter.report({
      type: "status",
      data: {
        status,
        ...(subCode ? { subCode } : {}),
        ...(joinedAs ? { joinedAs: joinedAs.slice(0, 300) } : {}),
      },
    });
  }

  /** The call is over: a leave waiting for it is done, or fails with `failure`. */
  private endCall(failure?: BotFailure): void {
    this.voiceReady.resolve();
    const ended = this.callEnded;
    this.callEnded = null;
    if (!ended) return;
    if (failure)
      ended.reject(new CommandRefusal("COMMAND_FAILED", `the bot failed instead: ${failure.message}`));
    else ended.resolve();
  }

  private throwIfInterrupted(): void {
    if (this.interrupt.signal.aborted) throw this.interrupt.signal.reason;
  }
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(error: Error): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A failure nobody waits for (no leave was asked) is not an unhandled rejection.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** The page shows the call is over for the bot (a leave waits for one before the browser closes). */
const CALL_OVER_PHASES = Object.keys(END_PHASES) as Phase[];

/** CALL_ENDED subCodes for which the platform already took the bot out of the call. */
const END_PHASES_BY_CODE: Partial<Record<SubCode, true>> = { MEETING_ENDED: true, REMOVED: true };
