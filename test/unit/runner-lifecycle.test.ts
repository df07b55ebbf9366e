import { Writable } from "node:stream";
import pino from "pino";
import type { Page } from "playwright";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  type JoinOptions,
  LEAVE_TIMEOUT_MS,
  JoinRefused,
  type PageSnapshot,
  type Participant,
  type Phase,
  type PlatformAdapter,
} from "../../platforms/adapter.js";
import type { LiveAdapter } from "../../platforms/live.js";
import {
  type AutomaticLeave,
  BotConfig,
  type BotConfigInput,
  type CallbackEventBody,
  type LoginSessionWriteBack,
  type StorageState,
} from "../../src/core/index.js";
import { BotFailure } from "../../src/runner/errors.js";
import { BotLifecycle, type Outcome } from "../../src/runner/lifecycle.js";
import type { LiveTranscriber, LiveTranscriptContext } from "../../src/runner/live-transcript/types.js";
import { PageWatcher } from "../../src/runner/page-watcher.js";
import type {
  LifecyclePorts,
  RecorderEvents,
  RecorderPort,
  SavedArtifact,
  StagePort,
} from "../../src/runner/ports.js";
import type { RecordingResult } from "../../src/runner/recorder.js";

/**
 * The bot's lifecycle driven through fakes of its own ports (stage, recorder, reporter,
 * uploader) on vitest's fake clock: every timeout and failure path, with no browser, no ffmpeg
 * and no waiting. The meeting is played by the test through the stage's PageWatcher, the very
 * class that carries the page's readings in a real run.
 */

const MEETING_URL = "https://meet.example.com/abc-defg-hij";
const ALICE = { id: "p-1", name: "Alice" };
const BOB = { id: "p-2", name: "Bob" };
const OTTER = { id: "p-3", name: "Otter.ai" };
const FIREFLIES = { id: "p-4", name: "Fireflies.ai Notetaker (Alice)" };
const SCRIBE = { id: "p-5", name: "Team Scribe" };
const SOUND_DBFS = -25;
const QUIET_DBFS = -75;

const snap = (phase: Phase, participants: Participant[] = []): PageSnapshot => ({ phase, participants });

class FakeRecorder implements RecorderPort {
  started = false;
  stopped = false;
  startFailure: BotFailure | null = null;

  constructor(
    readonly path: string,
    readonly events: RecorderEvents,
  ) {}

  async start(): Promise<Date> {
    if (this.startFailure) throw this.startFailure;
    this.started = true;
    return new Date();
  }

  /** The pauses and resumes asked (a resume with all the time paused so far, in ms). */
  readonly pauses: Array<["pause"] | ["resume", number]> = [];

  async pause(): Promise<void> {
    this.pauses.push(["pause"]);
  }

  async resume(pausedMs: number): Promise<void> {
    this.pauses.push(["resume", pausedMs]);
  }

  async stop(): Promise<RecordingResult> {
    if (!this.started) throw new BotFailure("RECORDING_FAILED", "recording was never started");
    this.stopped = true;
    return {
      path: this.path,
      sizeBytes: 1_000,
      durationMs: 5_000,
      frames: 125,
      droppedFrames: 0,
      duplicatedFrames: 0,
    };
  }

  /** What the recorded sound measures now. */
  hear(dbfs: number): void {
    this.events.onLevel(dbfs);
  }
}

/**
 * A live transcript source that hears one utterance: a partial while the call runs, and on stop
 * (after 1.5 s of decoding) its final, said by whoever the speaker timeline names.
 */
class FakeLiveTranscriber implements LiveTranscriber {
  private stopping: Promise<void> | null = null;

  constructor(readonly context: LiveTranscriptContext) {}

  stop(): Promise<void> {
    this.stopping ??= new Promise<void>((resolve) => setTimeout(resolve, 1_500)).then(() => {
      this.context.report({
        type: "transcript.final",
        data: {
          utteranceId: "ps-1",
          speaker: this.context.speakers.dominant(0, 60_000),
          text: "hello",
          startMs: 0,
          endMs: 1_000,
          source: "pocketsphinx",
          language: "en-US",
        },
      });
    });
    return this.stopping;
  }
}

class FakeStage implements StagePort {
  /** Closed: its browser is gone (a signal to the whole process group takes it down too). */
  pageClosed = false;
  readonly page = {
    isClosed: () => this.pageClosed,
    once: () => this.page,
  } as unknown as Page;
  /** What the page's camera was given, in order ("clear" for a clear), and the pages opened by then. */
  readonly pictures: { picture: string; openedBefore: number }[] = [];
  readonly camera = {
    show: async (png: Buffer) => {
      this.pictures.push({ picture: png.toString(), openedBefore: this.opened.length });
    },
    clear: async () => {
      this.pictures.push({ picture: "clear", openedBefore: this.opened.length });
    },
  };
  readonly watcher = new PageWatcher();
  readonly opened: string[] = [];
  openStatus: number | null = 200;
  recording: FakeRecorder | null = null;
  recorderStartFailure: BotFailure | null = null;
  crash: ((what: string) => void) | null = null;
  closed = false;
  /** What the meeting page does when the bot opens it. */
  onOpen: () => void = () => this.watcher.update(snap("prejoin"));

  async watch(): Promise<PageWatcher> {
    return this.watcher;
  }

  async open(url: string): Promise<number | null> {
    this.opened.push(url);
    this.onOpen();
    return this.openStatus;
  }

  onCrash(listener: (what: string) => void): void {
    this.crash = listener;
  }

  async startTrace(): Promise<void> {
    this.traced = true;
  }

  traced = false;
  /** The sessions restored into the browser, in order. */
  restored: StorageState[] = [];
  /** What the browser holds when the session is read back. */
  held: StorageState = { cookies: [], origins: [] };

  async restoreSession(session: StorageState): Promise<void> {
    this.restored.push(session);
  }

  async sessionState(): Promise<StorageState> {
    return this.held;
  }

  /** The screenshots taken; a page that cannot be shot throws `screenshotFailure`. */
  screenshots: string[] = [];
  screenshotFailure: Error | null = null;

  async screenshot(path: string): Promise<{ sizeBytes: number }> {
    if (this.screenshotFailure) throw this.screenshotFailure;
    this.screenshots.push(path);
    return { sizeBytes: 4321 };
  }

  async saveFailureArtifacts(dir: string): Promise<SavedArtifact[]> {
    return ["failure.png", "failure.html"].map((name) => ({ name, path: `${dir}/${name}` }));
  }

  recorder(path: string, events: RecorderEvents): RecorderPort {
    this.recording = new FakeRecorder(path, events);
    this.recording.startFailure = this.recorderStartFailure;
    return this.recording;
  }

  live: FakeLiveTranscriber | null = null;

  startLiveTranscript(context: LiveTranscriptContext, as?: "fallback"): LiveTranscriber {
    this.live = new FakeLiveTranscriber(context);
    this.liveAs = as ?? null;
    return this.live;
  }

  /** How the live transcript was started: null as itself, "fallback" standing in for captions. */
  liveAs: "fallback" | null = null;

  /** No sound card: a bot of these tests has no audio stream. */
  readonly agentAudio = {
    listen: () => ({ stop: async () => {} }),
    player: () => ({ write: () => {}, clear: () => {}, close: async () => {} }),
  };

  /** The clips played into the microphone, and how each ended. */
  played: Array<{ path: string; stopped: boolean }> = [];
  /** How long a clip plays unless stopped. */
  clipMs = 200;

  async playClip(path: string, signal: AbortSignal): Promise<void> {
    const entry = { path, stopped: false };
    this.played.push(entry);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", cut);
        resolve();
      }, this.clipMs);
      const cut = () => {
        clearTimeout(timer);
        entry.stopped = true;
        resolve();
      };
      signal.addEventListener("abort", cut);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** One bot against one fake meeting, with everything it reported, uploaded and logged. */
function setUp(automaticLeave: Partial<AutomaticLeave> = {}, extra: Partial<BotConfigInput> = {}) {
  const stage = new FakeStage();
  const reported: CallbackEventBody[] = [];
  const uploads: RecordingResult[] = [];
  const artifacts: string[] = [];
  const writtenBack: LoginSessionWriteBack[] = [];
  const logs: Array<{ msg: string; [key: string]: unknown }> = [];
  let uploadFailure: Error | null = null;
  const adapter = {
    platform: "google",
    meetingUrl: () => MEETING_URL,
    snapshot: () => snap("loading"),
    hooks: {},
    signIn: { url: "https://accounts.example/", cookieDomain: "example", sessionCookies: ["SID"] },
    /** What the meeting does when the bot asks to join; by default it lets the bot in, alone. */
    join: vi.fn(async (_page: Page, _opts: JoinOptions) => stage.watcher.update(snap("in_call"))),
    /** The page shows the bot left, as a real page does once Leave is clicked. */
    leave: vi.fn(async (_page: Page): Promise<string | null> => {
      stage.watcher.update(snap("left"));
      return null;
    }),
  } satisfies PlatformAdapter;
  const ports: LifecyclePorts = {
    prepareStage: async () => stage,
    fetchClip: async (clipId) => `/clips/${clipId}.wav`,
    fetchImage: async (imageId) => {
      if (imageId.startsWith("missing")) throw new Error(`picture ${imageId}: HTTP 404: Image not found`);
      return Buffer.from(`png of ${imageId}`);
    },
    reporter: {
      report: (body) => reported.push(body),
    },
    uploader: {
      uploadRecording: async (recording) => {
        if (uploadFailure) throw uploadFailure;
        uploads.push(recording);
      },
      uploadArtifact: async (name) => {
        artifacts.push(name);
      },
      writeBackSession: async (body) => {
        writtenBack.push(body);
        return true;
      },
    },
  };
  const config = BotConfig.parse({
    botId: 1,
    meetingInfo: { platform: "google", meetingUrl: MEETING_URL },
    automaticLeave,
    callback: { baseUrl: "http://127.0.0.1:9", token: "0123456789abcdef0123" },
    upload: { url: "http://127.0.0.1:9/v1/bot-callbacks/1/recording" },
    ...extra,
  });
  const log = pino(
    { level: "info" },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs.push(JSON.parse(chunk.toString()));
        done();
      },
    }),
  );
  const lifecycle = new BotLifecycle(config, "/work/bot-1", adapter, ports, log);

  let outcome: Outcome | undefined;
  return {
    stage,
    adapter,
    lifecycle,
    uploads,
    artifacts,
    writtenBack,
    reported,
    logs: () => logs.map((line) => line.msg),
    logLines: () => logs,
    failUploadsWith: (error: Error) => {
      uploadFailure = error;
    },
    /** Starts the bot; `outcome()` says how it ended, undefined while it runs. */
    start: () => {
      void lifecycle.run().then((result) => {
        outcome = result;
      });
    },
    outcome: () => outcome,
    /** The statuses reported, with their subCodes: "CALL_ENDED SILENCE". */
    statuses: () =>
      reported.flatMap((e) =>
        e.type === "status" ? [[e.data.status, e.data.subCode].filter(Boolean).join(" ")] : [],
      ),
    fatal: () => {
      const last = reported.at(-1);
      return last?.type === "status" && last.data.status === "FATAL" ? last.data : undefined;
    },
    eventTypes: () => reported.map((e) => e.type),
  };
}

/** Lets the bot run for `ms` of fake time (promises settle in between). */
const elapse = (ms: number) => vi.advanceTimersByTimeAsync(ms);

const RECORDED = ["JOINING_CALL", "IN_CALL"];
const LONG = 86_400_000;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("BotLifecycle: joining", () => {
  it("opens the adapter's URL and, when the page refuses the join, ends FATAL with its subCode", async () => {
    const bot = setUp();
    bot.adapter.join.mockRejectedValueOnce(new JoinRefused("BAD_PASSCODE", "wrong passcode"));
    bot.start();
    await elapse(0);
    expect(bot.stage.opened).toEqual([MEETING_URL]);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "FATAL BAD_PASSCODE"]);
    expect(bot.fatal()?.artifacts).toEqual(["failure.png", "failure.html"]);
    expect(bot.stage.recording).toBeNull();
    expect(bot.outcome()).toEqual({ status: "FATAL", subCode: "BAD_PASSCODE", message: "wrong passcode" });
    expect(bot.stage.closed).toBe(true);
  });

  it("ends FATAL MEETING_NOT_FOUND when the meeting page answers 404", async () => {
    const bot = setUp();
    bot.stage.openStatus = 404;
    bot.start();
    await elapse(0);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "FATAL MEETING_NOT_FOUND"]);
    expect(bot.adapter.join).not.toHaveBeenCalled();
  });

  it("ends FATAL JOIN_FAILED when the page never shows a join form (30 s)", async () => {
    const bot = setUp();
    bot.stage.onOpen = () => {}; // stays "loading"
    bot.start();
    await elapse(29_999);
    expect(bot.outcome()).toBeUndefined();
    await elapse(1);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "FATAL JOIN_FAILED"]);
  });

  it("reports IN_WAITING_ROOM before FATAL ADMISSION_DENIED even when the lobby was never seen", async () => {
    const bot = setUp();
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("denied")));
    bot.start();
    await elapse(0);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "IN_WAITING_ROOM", "FATAL ADMISSION_DENIED"]);
  });

  it("waits waitingRoomTimeout in the lobby, then leaves it FATAL WAITING_ROOM_TIMEOUT", async () => {
    const bot = setUp({ waitingRoomTimeout: 60_000 });
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("lobby")));
    bot.start();
    await elapse(59_999);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "IN_WAITING_ROOM"]);
    await elapse(1);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "IN_WAITING_ROOM", "FATAL WAITING_ROOM_TIMEOUT"]);
    expect(bot.adapter.leave).toHaveBeenCalledTimes(1);
    expect(bot.uploads).toEqual([]);
    expect(bot.logs()).not.toContain("the bot could not leave the waiting room politely");
  });

  it("says in its log why it could not leave the lobby politely", async () => {
    const bot = setUp({ waitingRoomTimeout: 60_000 });
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("lobby")));
    bot.adapter.leave.mockImplementationOnce(async () => "no Leave button on screen");
    bot.start();
    await elapse(60_000);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "IN_WAITING_ROOM", "FATAL WAITING_ROOM_TIMEOUT"]);
    expect(bot.logLines()).toContainEqual(
      expect.objectContaining({
        msg: "the bot could not leave the waiting room politely",
        reason: "no Leave button on screen",
      }),
    );
  });

  it("goes on from the lobby once admitted", async () => {
    const bot = setUp({ waitingRoomTimeout: 60_000 });
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("lobby")));
    bot.start();
    await elapse(30_000);
    bot.stage.watcher.update(snap("in_call", [ALICE]));
    await elapse(60_000);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "IN_WAITING_ROOM", "IN_CALL"]);
    expect(bot.stage.recording?.started).toBe(true);
  });
});

describe("BotLifecycle: the bot's picture (output.image)", () => {
  const image = (imageId: string) => ({ output: { image: { imageId, width: 1280, height: 720 } } });

  it("is on the camera before the meeting opens, and the join keeps the camera on", async () => {
    const bot = setUp({}, image("logo-0000001"));
    bot.start();
    await elapse(1_000);
    expect(bot.statuses()).toEqual(RECORDED);
    expect(bot.stage.pictures).toEqual([{ picture: "png of logo-0000001", openedBefore: 0 }]);
    expect(bot.adapter.join.mock.calls[0]?.[1]).toMatchObject({ camera: true });
  });

  it("that cannot be fetched: the bot says why and joins with its camera off", async () => {
    const bot = setUp({}, image("missing-0001"));
    bot.start();
    await elapse(1_000);
    expect(bot.statuses()).toEqual(RECORDED);
    expect(bot.stage.pictures).toEqual([]);
    expect(bot.adapter.join.mock.calls[0]?.[1]).toMatchObject({ camera: false });
    expect(bot.reported).toContainEqual({
      type: "log",
      data: {
        level: "info",
        message:
          "the bot's picture (output.image) could not be loaded, so it joins with its camera off: picture missing-0001: HTTP 404: Image not found",
      },
    });
  });

  it("without one, the join turns the camera off as always", async () => {
    const bot = setUp();
    bot.start();
    await elapse(1_000);
    expect(bot.adapter.join.mock.calls[0]?.[1]).toMatchObject({ camera: false });
    expect(bot.stage.pictures).toEqual([]);
  });
});

describe("BotLifecycle: leaving the call", () => {
  it("leaves after noOneJoinedTimeout alone: CALL_ENDED NO_ONE_JOINED, then DONE with the recording", async () => {
    const bot = setUp({ noOneJoinedTimeout: 120_000 });
    bot.start();
    await elapse(119_999);
    expect(bot.statuses()).toEqual(RECORDED);
    await elapse(1);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED NO_ONE_JOINED", "DONE"]);
    expect(bot.adapter.leave).toHaveBeenCalledTimes(1);
    expect(bot.stage.recording?.stopped).toBe(true);
    expect(bot.uploads.map((u) => u.path)).toEqual(["/work/bot-1/recording.mp4"]);
    expect(bot.outcome()).toEqual({ status: "DONE" });
  });

  it("leaves everyoneLeftTimeout after the last participant left: EVERYONE_LEFT", async () => {
    const bot = setUp({ everyoneLeftTimeout: 60_000, noOneJoinedTimeout: 1_000 });
    bot.adapter.join.mockImplementationOnce(async () =>
      bot.stage.watcher.update(snap("in_call", [ALICE, BOB])),
    );
    bot.start();
    await elapse(10_000);
    bot.stage.watcher.update(snap("in_call", [BOB]));
    await elapse(10_000);
    bot.stage.watcher.update(snap("in_call", []));
    await elapse(59_999);
    expect(bot.statuses()).toEqual(RECORDED);
    await elapse(1);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED EVERYONE_LEFT", "DONE"]);
    expect(bot.eventTypes().filter((t) => t.startsWith("participant."))).toEqual([
      "participant.joined",
      "participant.joined",
      "participant.left",
      "participant.left",
    ]);
  });

  it("watches the call while an audio-only bot clicks through menus: who came and went is reported then", async () => {
    const bot = setUp(
      { everyoneLeftTimeout: 10_000, noOneJoinedTimeout: LONG },
      { recording: { video: false } },
    );
    // Turning incoming video off takes the page's menus 20 s here (a slow page, a hidden item).
    const turnOffIncomingVideo = vi.fn(
      () => new Promise<string | null>((resolve) => setTimeout(() => resolve(null), 20_000)),
    );
    (bot.adapter as PlatformAdapter).live = { turnOffIncomingVideo } as unknown as LiveAdapter;
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("in_call", [ALICE])));
    bot.start();
    await elapse(5_000);
    bot.stage.watcher.update(snap("in_call", []));
    await elapse(1_000);
    expect(turnOffIncomingVideo).toHaveBeenCalledTimes(1);
    expect(bot.eventTypes().filter((t) => t.startsWith("participant."))).toEqual([
      "participant.joined",
      "participant.left",
    ]);
    // Everyone left at 5 s: the bot leaves as soon as the menus let it go (20 s), not 10 s after.
    await elapse(15_000);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED EVERYONE_LEFT", "DONE"]);
  });

  it("leaves onlyBotsTimeout after the last person left and only notetakers stay: ONLY_BOTS_LEFT", async () => {
    const bot = setUp({ everyoneLeftTimeout: LONG, noOneJoinedTimeout: 1_000, onlyBotsTimeout: 60_000 });
    bot.adapter.join.mockImplementationOnce(async () =>
      bot.stage.watcher.update(snap("in_call", [ALICE, OTTER, FIREFLIES])),
    );
    bot.start();
    await elapse(10_000);
    bot.stage.watcher.update(snap("in_call", [OTTER, FIREFLIES]));
    await elapse(30_000);
    bot.stage.watcher.update(snap("in_call", [ALICE, OTTER, FIREFLIES])); // back: the clock stops
    await elapse(40_000);
    bot.stage.watcher.update(snap("in_call", [OTTER, FIREFLIES]));
    await elapse(59_999);
    expect(bot.statuses()).toEqual(RECORDED);
    await elapse(1);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED ONLY_BOTS_LEFT", "DONE"]);
    expect(bot.adapter.leave).toHaveBeenCalledTimes(1);
  });

  it("bots alone from the start are no one: NO_ONE_JOINED, not ONLY_BOTS_LEFT", async () => {
    const bot = setUp({ noOneJoinedTimeout: 120_000, onlyBotsTimeout: 1_000 });
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("in_call", [OTTER])));
    bot.start();
    await elapse(119_999);
    expect(bot.statuses()).toEqual(RECORDED);
    await elapse(1);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED NO_ONE_JOINED", "DONE"]);
  });

  it("a bot that stays once everyone left, then leaves too: EVERYONE_LEFT counts from then", async () => {
    const bot = setUp({ everyoneLeftTimeout: 60_000, onlyBotsTimeout: 300_000 });
    bot.adapter.join.mockImplementationOnce(async () =>
      bot.stage.watcher.update(snap("in_call", [ALICE, OTTER])),
    );
    bot.start();
    await elapse(1_000);
    bot.stage.watcher.update(snap("in_call", [OTTER]));
    await elapse(100_000);
    bot.stage.watcher.update(snap("in_call", []));
    await elapse(59_999);
    expect(bot.statuses()).toEqual(RECORDED);
    await elapse(1);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED EVERYONE_LEFT", "DONE"]);
  });

  it("onlyBotsTimeout 0: a notetaker counts as a person and the bot stays with it", async () => {
    const bot = setUp({
      everyoneLeftTimeout: 60_000,
      noOneJoinedTimeout: 60_000,
      onlyBotsTimeout: 0,
      silenceTimeout: 0,
    });
    bot.adapter.join.mockImplementationOnce(async () =>
      bot.stage.watcher.update(snap("in_call", [ALICE, OTTER])),
    );
    bot.start();
    await elapse(1_000);
    bot.stage.watcher.update(snap("in_call", [OTTER]));
    await elapse(3_600_000);
    expect(bot.statuses()).toEqual(RECORDED);
  });

  it("botNames replaces the list: a name outside it is a person", async () => {
    const bot = setUp({
      everyoneLeftTimeout: LONG,
      onlyBotsTimeout: 5_000,
      botNames: ["scribe"],
      silenceTimeout: 0,
    });
    bot.adapter.join.mockImplementationOnce(async () =>
      bot.stage.watcher.update(snap("in_call", [ALICE, OTTER, SCRIBE])),
    );
    bot.start();
    await elapse(1_000);
    bot.stage.watcher.update(snap("in_call", [OTTER, SCRIBE]));
    await elapse(3_600_000);
    expect(bot.statuses()).toEqual(RECORDED); // Otter is a person here
    bot.stage.watcher.update(snap("in_call", [SCRIBE]));
    await elapse(5_000);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED ONLY_BOTS_LEFT", "DONE"]);
  });

  it("leaves after maxDuration whatever happens in the call: MAX_DURATION", async () => {
    const bot = setUp({ maxDuration: 300_000 });
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("in_call", [ALICE])));
    bot.start();
    await elapse(0);
    for (let t = 0; t < 299_000; t += 1_000) {
      bot.stage.recording?.hear(SOUND_DBFS);
      await elapse(1_000);
    }
    expect(bot.statuses()).toEqual(RECORDED);
    await elapse(1_000);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED MAX_DURATION", "DONE"]);
  });

  it("does not call leave when the host ended the meeting: MEETING_ENDED", async () => {
    const bot = setUp();
    bot.start();
    await elapse(5_000);
    bot.stage.watcher.update(snap("ended"));
    await elapse(0);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED MEETING_ENDED", "DONE"]);
    expect(bot.adapter.leave).not.toHaveBeenCalled();
  });

  it("leaves on a stop request mid-call: LEFT_ON_REQUEST, recording finalized and uploaded", async () => {
    const bot = setUp();
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("in_call", [ALICE])));
    bot.start();
    await elapse(20_000);
    bot.lifecycle.requestStop();
    await elapse(0);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED LEFT_ON_REQUEST", "DONE"]);
    expect(bot.adapter.leave).toHaveBeenCalledTimes(1);
    expect(bot.stage.recording?.stopped).toBe(true);
    expect(bot.uploads).toHaveLength(1);
    expect(bot.eventTypes()).toContain("recording.stopped");
  });

  it("waits for the page to show the bot left before CALL_ENDED, LEAVE_TIMEOUT_MS at most", async () => {
    const bot = setUp();
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("in_call", [ALICE])));
    // The click did not take: the page still shows the call.
    bot.adapter.leave.mockImplementationOnce(async () => "Leave call did not go through: Timeout");
    bot.start();
    await elapse(20_000);
    bot.lifecycle.requestStop();
    await elapse(LEAVE_TIMEOUT_MS - 100);
    expect(bot.statuses()).toEqual(RECORDED);
    await elapse(100);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED LEFT_ON_REQUEST", "DONE"]);
    // Its log says why, for whoever wonders why the others saw the bot drop.
    expect(bot.logLines()).toContainEqual(
      expect.objectContaining({
        msg: "the page did not show the bot out of the call after its leave",
        leave: "Leave call did not go through: Timeout",
      }),
    );
  });

  it("does not wait for a closed page to show the bot left: CALL_ENDED at once", async () => {
    const bot = setUp();
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("in_call", [ALICE])));
    // The browser went down with the stop signal: nothing to click, nothing will render.
    bot.adapter.leave.mockImplementationOnce(async () => {
      bot.stage.pageClosed = true;
      return null;
    });
    bot.start();
    await elapse(20_000);
    bot.lifecycle.requestStop();
    await elapse(100);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED LEFT_ON_REQUEST", "DONE"]);
  });

  it("leaves on a leave command: the command is done once CALL_ENDED LEFT_ON_REQUEST is reported, then the upload and DONE", async () => {
    const bot = setUp();
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("in_call", [ALICE])));
    bot.start();
    await elapse(20_000);
    let reportsWhenDone: string[] = [];
    const leaving = bot.lifecycle.handleCommand({ commandId: 9, kind: "leave", payload: {} }).then(() => {
      reportsWhenDone = bot.statuses();
    });
    await elapse(0);
    await leaving;
    expect(reportsWhenDone).toContain("CALL_ENDED LEFT_ON_REQUEST");
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED LEFT_ON_REQUEST", "DONE"]);
    expect(bot.adapter.leave).toHaveBeenCalledTimes(1);
    expect(bot.uploads).toHaveLength(1);
  });

  it("a screenshot command shoots the page, uploads it as live-view.png and answers its size", async () => {
    const bot = setUp({ waitingRoomTimeout: 60_000 });
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("lobby")));
    bot.start();
    await elapse(1_000);
    // In the lobby already: a view of the page is most useful while a join is stuck.
    await expect(
      bot.lifecycle.handleCommand({ commandId: 3, kind: "screenshot", payload: {} }),
    ).resolves.toEqual({ artifact: "live-view.png", sizeBytes: 4321, takenAt: expect.any(String) });
    expect(bot.stage.screenshots).toEqual(["/work/bot-1/live-view.png"]);
    expect(bot.artifacts).toEqual(["live-view.png"]);
    bot.stage.screenshotFailure = new Error("page crashed");
    await expect(
      bot.lifecycle.handleCommand({ commandId: 4, kind: "screenshot", payload: {} }),
    ).rejects.toThrow("page crashed");
  });

  it("a screenshot command before the browser opened the meeting fails NOT_IN_CALL", async () => {
    const bot = setUp();
    await expect(
      bot.lifecycle.handleCommand({ commandId: 3, kind: "screenshot", payload: {} }),
    ).rejects.toMatchObject({ code: "NOT_IN_CALL" });
    expect(bot.artifacts).toEqual([]);
  });

  describe("the bot's voice (play_audio, stop_audio)", () => {
    const clip = (clipId: string, durationMs: number) => ({
      clipId,
      durationMs,
      source: "speak",
      text: "Hello from the bot",
    });
    /** What the bot reported of its sounds and of itself as a speaker, in order. */
    const voiceEvents = (bot: ReturnType<typeof setUp>) =>
      bot.reported
        .filter((e) => e.type.startsWith("output.") || e.type.startsWith("speaker."))
        .map((e) =>
          e.type.startsWith("output.")
            ? `${e.type} ${(e.data as { commandId: number }).commandId} ${(e.data as { reason?: string }).reason ?? ""}`.trim()
            : `${e.type} ${(e.data as { participantId: string }).participantId}`,
        );

    async function inCall() {
      const bot = setUp();
      bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("in_call", [ALICE])));
      bot.start();
      await elapse(20_000);
      return bot;
    }

    it("plays a clip into the microphone, as the bot's own turn, and is done with how much was heard", async () => {
      const bot = await inCall();
      const playing = bot.lifecycle.handleCommand({
        commandId: 5,
        kind: "play_audio",
        payload: clip("clip-aaaaaaaa", 200),
      });
      await elapse(250);
      await expect(playing).resolves.toEqual({ durationMs: 200, playedMs: 200 });
      expect(bot.stage.played).toEqual([{ path: "/clips/clip-aaaaaaaa.wav", stopped: false }]);
      expect(voiceEvents(bot)).toEqual([
        "output.started 5",
        "speaker.started self",
        "speaker.stopped self",
        "output.ended 5 finished",
      ]);
    });

    it("a stop ends the sound playing and drops those asked for before it; later ones play", async () => {
      const bot = await inCall();
      bot.stage.clipMs = 10_000;
      const first = bot.lifecycle.handleCommand({
        commandId: 6,
        kind: "play_audio",
        payload: clip("clip-bbbbbbbb", 10_000),
      });
      await elapse(100);
      await expect(
        bot.lifecycle.handleCommand({ commandId: 8, kind: "stop_audio", payload: {} }),
      ).resolves.toEqual({
        stopped: true,
      });
      await expect(first).rejects.toMatchObject({ code: "OUTPUT_STOPPED" });
      // Queued before the stop: dropped without a sound.
      await expect(
        bot.lifecycle.handleCommand({
          commandId: 7,
          kind: "play_audio",
          payload: clip("clip-cccccccc", 100),
        }),
      ).rejects.toMatchObject({ code: "OUTPUT_STOPPED" });
      expect(bot.stage.played).toEqual([{ path: "/clips/clip-bbbbbbbb.wav", stopped: true }]);
      bot.stage.clipMs = 100;
      const later = bot.lifecycle.handleCommand({
        commandId: 9,
        kind: "play_audio",
        payload: clip("clip-dddddddd", 100),
      });
      await elapse(150);
      await expect(later).resolves.toMatchObject({ playedMs: 100 });
      expect(voiceEvents(bot).filter((e) => e.startsWith("output.ended"))).toEqual([
        "output.ended 6 stopped",
        "output.ended 9 finished",
      ]);
    });

    it("the call's end cuts the sound (NOT_IN_CALL), and a malformed payload is refused", async () => {
      const bot = await inCall();
      await expect(
        bot.lifecycle.handleCommand({
          commandId: 4,
          kind: "play_audio",
          payload: { clipId: "../etc/passwd" },
        }),
      ).rejects.toMatchObject({ code: "COMMAND_FAILED" });
      bot.stage.clipMs = 10_000;
      const playing = bot.lifecycle.handleCommand({
        commandId: 5,
        kind: "play_audio",
        payload: clip("clip-eeeeeeee", 10_000),
      });
      playing.catch(() => {}); // rejected before the expectation below is attached
      await elapse(100);
      bot.stage.watcher.update(snap("ended"));
      await elapse(0);
      await expect(playing).rejects.toMatchObject({ code: "NOT_IN_CALL" });
      expect(voiceEvents(bot)).toContain("output.ended 5 call_ended");
      await expect(
        bot.lifecycle.handleCommand({
          commandId: 6,
          kind: "play_audio",
          payload: clip("clip-ffffffff", 100),
        }),
      ).rejects.toMatchObject({ code: "NOT_IN_CALL" });
    });
  });

  it("refuses a leave command NOT_IN_CALL before the call and after it, and an unknown command UNKNOWN_COMMAND", async () => {
    const bot = setUp({ waitingRoomTimeout: 60_000 });
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("lobby")));
    bot.start();
    await elapse(1_000);
    const leave = { commandId: 1, kind: "leave", payload: {} };
    await expect(bot.lifecycle.handleCommand(leave)).rejects.toMatchObject({
      code: "NOT_IN_CALL",
      message: expect.stringContaining("IN_WAITING_ROOM"),
    });
    await expect(bot.lifecycle.handleCommand({ ...leave, kind: "dance" })).rejects.toMatchObject({
      code: "UNKNOWN_COMMAND",
    });
    // The command changed nothing: the bot still waits in the lobby.
    expect(bot.statuses()).toEqual(["JOINING_CALL", "IN_WAITING_ROOM"]);
    bot.stage.watcher.update(snap("in_call", [ALICE]));
    await elapse(0);
    bot.stage.watcher.update(snap("ended"));
    await elapse(0);
    expect(bot.statuses()).toEqual([
      ...RECORDED.slice(0, 1),
      "IN_WAITING_ROOM",
      "IN_CALL",
      "CALL_ENDED MEETING_ENDED",
      "DONE",
    ]);
    await expect(bot.lifecycle.handleCommand(leave)).rejects.toMatchObject({ code: "NOT_IN_CALL" });
  });

  it("fails a leave command COMMAND_FAILED when the bot fails while leaving", async () => {
    const bot = setUp();
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("in_call", [ALICE])));
    bot.adapter.leave.mockImplementationOnce(async () => {
      throw new BotFailure("BROWSER_CRASHED", "the page crashed");
    });
    bot.start();
    await elapse(1_000);
    const leaving = bot.lifecycle.handleCommand({ commandId: 3, kind: "leave", payload: {} });
    const outcome = expect(leaving).rejects.toMatchObject({ code: "COMMAND_FAILED" });
    await elapse(0);
    await outcome;
    expect(bot.statuses().at(-1)).toBe("FATAL BROWSER_CRASHED");
  });

  it("ends FATAL KILLED on a stop request before the call", async () => {
    const bot = setUp({ waitingRoomTimeout: 60_000 });
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("lobby")));
    bot.start();
    await elapse(1_000);
    bot.lifecycle.requestStop();
    await elapse(0);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "IN_WAITING_ROOM", "FATAL KILLED"]);
  });
});

describe("BotLifecycle: silence", () => {
  const inCallWithAlice = (bot: ReturnType<typeof setUp>) =>
    bot.adapter.join.mockImplementationOnce(async () => bot.stage.watcher.update(snap("in_call", [ALICE])));

  it("leaves when the recorded sound stays at or below -60 dBFS for silenceTimeout: SILENCE, then DONE", async () => {
    const bot = setUp({ silenceTimeout: 10_000 });
    inCallWithAlice(bot);
    bot.start();
    await elapse(0);
    // Readings at the level itself and below do not count as sound.
    for (let t = 0; t < 9_500; t += 500) {
      bot.stage.recording?.hear(t % 1_000 === 0 ? -60 : QUIET_DBFS);
      await elapse(500);
    }
    await elapse(499);
    expect(bot.statuses()).toEqual(RECORDED);
    await elapse(1);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED SILENCE", "DONE"]);
    expect(bot.adapter.leave).toHaveBeenCalledTimes(1);
    expect(bot.uploads).toHaveLength(1);
    expect(bot.logs()).toContain("leaving: no sound in the call");
  });

  it("counts no readings at all as silence", async () => {
    const bot = setUp({ silenceTimeout: 10_000 });
    inCallWithAlice(bot);
    bot.start();
    await elapse(10_000);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED SILENCE", "DONE"]);
  });

  it("restarts the clock on any sound above the level", async () => {
    const bot = setUp({ silenceTimeout: 10_000 });
    inCallWithAlice(bot);
    bot.start();
    await elapse(8_000);
    bot.stage.recording?.hear(-59);
    await elapse(9_999);
    expect(bot.statuses()).toEqual(RECORDED);
    expect(bot.logs()).toContain("sound again: silence clock reset");
    await elapse(1);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED SILENCE", "DONE"]);
  });

  it("does not count a paused recording's time as silence; a bot leaving while paused still uploads", async () => {
    const bot = setUp({ silenceTimeout: 10_000 });
    inCallWithAlice(bot);
    bot.start();
    await elapse(4_000);
    await expect(
      bot.lifecycle.handleCommand({ commandId: 5, kind: "pause_recording", payload: {} }),
    ).resolves.toEqual({ paused: true, changed: true, recordingMs: 4_000 });
    // A minute paused: nothing is heard, and that is no silent call.
    await elapse(60_000);
    expect(bot.statuses()).toEqual(RECORDED);
    await expect(
      bot.lifecycle.handleCommand({ commandId: 6, kind: "resume_recording", payload: {} }),
    ).resolves.toEqual({ paused: false, changed: true, recordingMs: 4_000 });
    await bot.lifecycle.handleCommand({ commandId: 7, kind: "pause_recording", payload: {} });
    await elapse(30_000);
    expect(bot.statuses()).toEqual(RECORDED);
    bot.lifecycle.requestStop();
    await elapse(0);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED LEFT_ON_REQUEST", "DONE"]);
    expect(bot.stage.recording?.pauses).toEqual([["pause"], ["resume", 60_000], ["pause"]]);
    expect(bot.uploads).toHaveLength(1);
    expect(bot.eventTypes().filter((type) => type.startsWith("recording."))).toEqual([
      "recording.started",
      "recording.paused",
      "recording.resumed",
      "recording.paused",
      "recording.stopped",
    ]);
    await expect(
      bot.lifecycle.handleCommand({ commandId: 8, kind: "resume_recording", payload: {} }),
    ).rejects.toMatchObject({ code: "NOT_IN_CALL" });
  });

  it("never leaves for silence with silenceTimeout 0", async () => {
    const bot = setUp({ silenceTimeout: 0, maxDuration: 3_600_000 });
    inCallWithAlice(bot);
    bot.start();
    await elapse(3_599_999);
    expect(bot.statuses()).toEqual(RECORDED);
    await elapse(1);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED MAX_DURATION", "DONE"]);
  });

  it("stays while people talk", async () => {
    const bot = setUp({ silenceTimeout: 2_000, maxDuration: 60_000 });
    inCallWithAlice(bot);
    bot.start();
    await elapse(0);
    // Talk for two seconds, pause for one (1.5 s between the last sound and the next).
    for (let t = 0; t < 59_000; t += 500) {
      bot.stage.recording?.hear(t % 3_000 < 2_000 ? SOUND_DBFS : QUIET_DBFS);
      await elapse(500);
    }
    expect(bot.statuses()).toEqual(RECORDED);
  });
});

describe("BotLifecycle: failures", () => {
  it("ends FATAL RECORDING_FAILED, without hanging, when the recorder cannot start", async () => {
    const bot = setUp({ noOneJoinedTimeout: LONG, maxDuration: LONG, silenceTimeout: 0 });
    bot.stage.recorderStartFailure = new BotFailure("RECORDING_FAILED", "ffmpeg exited (1) before recording");
    bot.start();
    await elapse(0);
    expect(bot.statuses()).toEqual([...RECORDED, "FATAL RECORDING_FAILED"]);
    expect(bot.outcome()).toMatchObject({ status: "FATAL", subCode: "RECORDING_FAILED" });
    expect(bot.uploads).toEqual([]);
    expect(bot.stage.closed).toBe(true);
  });

  it("ends FATAL RECORDING_FAILED when the recorder gives up mid-call, and still uploads what it has", async () => {
    const bot = setUp({ noOneJoinedTimeout: LONG });
    bot.start();
    await elapse(30_000);
    bot.stage.recording?.events.onFailure(new BotFailure("RECORDING_FAILED", "ffmpeg exited 4 times"));
    await elapse(0);
    expect(bot.statuses()).toEqual([...RECORDED, "FATAL RECORDING_FAILED"]);
    expect(bot.uploads).toHaveLength(1);
  });

  it("ends FATAL BROWSER_CRASHED when the page crashes mid-call, and still uploads the recording", async () => {
    const bot = setUp({ noOneJoinedTimeout: LONG });
    bot.start();
    await elapse(30_000);
    bot.stage.crash?.("the page crashed");
    await elapse(0);
    expect(bot.statuses()).toEqual([...RECORDED, "FATAL BROWSER_CRASHED"]);
    expect(bot.fatal()?.message).toBe("the page crashed");
    expect(bot.uploads).toHaveLength(1);
  });

  it("ends FATAL UPLOAD_FAILED after CALL_ENDED when the recording cannot be delivered", async () => {
    const bot = setUp();
    bot.failUploadsWith(new Error("upload refused: HTTP 413"));
    bot.start();
    await elapse(1_000);
    bot.stage.watcher.update(snap("ended"));
    await elapse(0);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED MEETING_ENDED", "FATAL UPLOAD_FAILED"]);
    expect(bot.fatal()?.message).toBe(
      "recording kept at /work/bot-1/recording.mp4: upload refused: HTTP 413",
    );
    expect(bot.outcome()).toMatchObject({ status: "FATAL", subCode: "UPLOAD_FAILED" });
  });
});

describe("BotLifecycle: signed-in bots and walls", () => {
  const SESSION: StorageState = {
    cookies: [
      {
        name: "SID",
        value: "google.secret-session-value-1",
        domain: "meet.example.com",
        path: "/",
        expires: -1,
        httpOnly: true,
        secure: true,
        sameSite: "Lax",
      },
    ],
    origins: [{ origin: "https://meet.example.com", localStorage: [{ name: "k", value: "v" }] }],
  };
  const ROTATED: StorageState = {
    cookies: [
      { ...(SESSION.cookies[0] as StorageState["cookies"][number]), value: "google.rotated-value-2" },
    ],
    origins: SESSION.origins,
  };
  const login = (mode: "always" | "only_if_required") => ({
    login: { mode, accountId: 7, accountName: "Bot Account", session: SESSION },
  });
  const signedInPrejoin = (): PageSnapshot => ({
    phase: "prejoin",
    participants: [],
    account: { name: "Robo Account", email: "robo@example.com" },
  });

  /** A bot whose join confirms the sign-in (when asked to) before it clicks, and records the click. */
  function signedInBot(mode: "always" | "only_if_required", automaticLeave: Partial<AutomaticLeave> = {}) {
    const bot = setUp({ noOneJoinedTimeout: LONG, ...automaticLeave }, login(mode));
    const clicked: boolean[] = [];
    bot.adapter.join.mockImplementation(async (_page: Page, opts: JoinOptions) => {
      await opts.confirmSignedIn?.();
      clicked.push(opts.confirmSignedIn !== undefined);
      bot.stage.watcher.update(snap("in_call"));
    });
    bot.stage.held = ROTATED;
    return { ...bot, clicked };
  }

  const joinedAs = (bot: ReturnType<typeof setUp>) =>
    bot.reported.flatMap((e) =>
      e.type === "status" && e.data.status === "IN_CALL" ? [e.data.joinedAs] : [],
    );

  it("always: restores the session before opening, joins under the account's name and writes the rotated session back before DONE", async () => {
    const bot = signedInBot("always");
    bot.stage.onOpen = () => bot.stage.watcher.update(signedInPrejoin());
    bot.start();
    await elapse(1_000);
    expect(bot.stage.restored).toEqual([SESSION]);
    expect(bot.clicked).toEqual([true]);
    expect(joinedAs(bot)).toEqual(["Robo Account"]);
    // Never a trace with a session in the browser.
    expect(bot.stage.traced).toBe(false);
    bot.stage.watcher.update(snap("ended"));
    await elapse(0);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED MEETING_ENDED", "DONE"]);
    expect(bot.writtenBack).toEqual([
      { session: ROTATED, accountName: "Robo Account", accountEmail: "robo@example.com" },
    ]);
    // Written back before the last status report.
    const lastStatus = bot.reported.findLastIndex((e) => e.type === "status");
    expect(bot.reported.length - 1).toBe(lastStatus);
  });

  it("always: a guest's pre-join (no account) ends SESSION_EXPIRED without a click or a write-back", async () => {
    const bot = signedInBot("always");
    bot.stage.onOpen = () => bot.stage.watcher.update(snap("prejoin"));
    bot.start();
    await elapse(4_999);
    expect(bot.outcome()).toBeUndefined();
    await elapse(1);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "FATAL SESSION_EXPIRED"]);
    expect(bot.clicked).toEqual([]);
    expect(bot.writtenBack).toEqual([]);
  });

  it("always: a sign-in page ends SESSION_EXPIRED at once; the session's values are in no report or log", async () => {
    const bot = signedInBot("always");
    bot.stage.onOpen = () => bot.stage.watcher.update(snap("sign_in"));
    bot.start();
    await elapse(0);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "FATAL SESSION_EXPIRED"]);
    expect(bot.adapter.join).not.toHaveBeenCalled();
    const everything = JSON.stringify([bot.reported, bot.logLines()]);
    expect(everything).not.toContain("secret-session-value");
  });

  it("only_if_required: joins anonymously, and on SIGN_IN_REQUIRED tries once more signed in, saying so", async () => {
    const bot = signedInBot("only_if_required");
    let opens = 0;
    bot.stage.onOpen = () => {
      opens += 1;
      bot.stage.watcher.update(opens === 1 ? snap("sign_in") : signedInPrejoin());
    };
    bot.start();
    await elapse(1_000);
    expect(bot.stage.opened).toHaveLength(2);
    expect(bot.stage.restored).toEqual([SESSION]);
    expect(bot.statuses()).toEqual(RECORDED);
    expect(joinedAs(bot)).toEqual(["Robo Account"]);
    const said = bot.reported.flatMap((e) => (e.type === "log" ? [e.data.message] : []));
    expect(said.some((m) => m.includes("trying again signed in with account 7"))).toBe(true);
  });

  it("only_if_required: a meeting open to guests is joined anonymously, under the display name, with nothing written back", async () => {
    const bot = signedInBot("only_if_required");
    bot.start();
    await elapse(1_000);
    expect(bot.stage.restored).toEqual([]);
    expect(bot.clicked).toEqual([false]);
    expect(joinedAs(bot)).toEqual(["Meetbot"]);
    bot.stage.watcher.update(snap("ended"));
    await elapse(0);
    expect(bot.writtenBack).toEqual([]);
  });

  it("anonymous: a sign-in wall is SIGN_IN_REQUIRED, with no second try", async () => {
    const bot = setUp();
    bot.stage.onOpen = () => bot.stage.watcher.update(snap("sign_in"));
    bot.start();
    await elapse(0);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "FATAL SIGN_IN_REQUIRED"]);
    expect(bot.stage.opened).toHaveLength(1);
  });

  it("a bot wall that shows while the join form is being filled ends BOT_BLOCKED at once", async () => {
    const bot = setUp();
    // The form never finishes: the wall replaced it.
    bot.adapter.join.mockImplementationOnce(async () => {
      bot.stage.watcher.update(snap("bot_wall"));
      await new Promise(() => {});
    });
    bot.start();
    await elapse(0);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "FATAL BOT_BLOCKED"]);
  });

  it("always: signed in, then refused at the lobby: FATAL, and the rotated session is still written back", async () => {
    const bot = signedInBot("always");
    bot.stage.onOpen = () => bot.stage.watcher.update(signedInPrejoin());
    bot.adapter.join.mockImplementationOnce(async (_page: Page, opts: JoinOptions) => {
      await opts.confirmSignedIn?.();
      throw new JoinRefused("ADMISSION_DENIED", "the host denied entry");
    });
    bot.start();
    await elapse(0);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "IN_WAITING_ROOM", "FATAL ADMISSION_DENIED"]);
    expect(bot.writtenBack).toEqual([
      { session: ROTATED, accountName: "Robo Account", accountEmail: "robo@example.com" },
    ]);
  });

  it("only 'Switch here' offered (the account is busy): LOGIN_UNAVAILABLE", async () => {
    const bot = signedInBot("always");
    bot.stage.onOpen = () => bot.stage.watcher.update(signedInPrejoin());
    bot.adapter.join.mockImplementationOnce(async () => {
      throw new JoinRefused("LOGIN_UNAVAILABLE", "only Switch here");
    });
    bot.start();
    await elapse(0);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "FATAL LOGIN_UNAVAILABLE"]);
  });

  it("the Teams bot token goes to the adapter's URL, never into a report or log", async () => {
    const token = "eyJ0eXAiOiJKV1QiLCJhbGciOi.teams-bot-token";
    const bot = setUp({}, { teamsBotToken: token });
    const urls: Array<string | undefined> = [];
    bot.adapter.meetingUrl = ((_info: unknown, _urls: unknown, extras?: { botToken?: string }) => {
      urls.push(extras?.botToken);
      return `${MEETING_URL}#token=${extras?.botToken}`;
    }) as typeof bot.adapter.meetingUrl;
    bot.adapter.join.mockRejectedValueOnce(new Error(`timeout at ${MEETING_URL}#token=${token}`));
    bot.start();
    await elapse(0);
    expect(urls).toEqual([token]);
    expect(bot.stage.traced).toBe(false);
    expect(bot.statuses()).toEqual(["JOINING_CALL", "FATAL JOIN_FAILED"]);
    expect(JSON.stringify([bot.reported, bot.logLines(), bot.outcome()])).not.toContain(token);
  });
});

describe("BotLifecycle: the live transcript", () => {
  const live = { liveTranscript: { source: "pocketsphinx" as const } };

  it("starts with the recording, on its clock, and is not started without the option", async () => {
    const plain = setUp({ noOneJoinedTimeout: LONG });
    plain.start();
    await elapse(1_000);
    expect(plain.stage.live).toBeNull();

    const bot = setUp({ noOneJoinedTimeout: LONG }, live);
    bot.start();
    await elapse(1_000);
    const context = bot.stage.live?.context;
    expect(context?.options).toEqual({ source: "pocketsphinx", fallback: false });
    const started = bot.reported.find((e) => e.type === "recording.started");
    expect(started?.data).toMatchObject({ startedAt: context?.clock.startedAt.toISOString() });
  });

  it("names the speaker from the speaker events the bot reports, on the recording's clock", async () => {
    const bot = setUp({ noOneJoinedTimeout: LONG }, live);
    bot.adapter.join.mockImplementationOnce(async () =>
      bot.stage.watcher.update(snap("in_call", [ALICE, BOB])),
    );
    bot.start();
    await elapse(2_000);
    bot.stage.watcher.update({ ...snap("in_call", [ALICE, BOB]), speakers: [BOB.id] });
    await elapse(3_000);
    bot.stage.watcher.update({ ...snap("in_call", [ALICE, BOB]), speakers: [ALICE.id] });
    await elapse(1_000);
    bot.stage.watcher.update(snap("in_call", [ALICE, BOB]));
    const speakers = bot.stage.live?.context.speakers;
    expect(speakers?.dominant(2_000, 5_000)).toEqual({ participantId: BOB.id, name: BOB.name });
    expect(speakers?.dominant(5_000, 6_000)).toEqual({ participantId: ALICE.id, name: ALICE.name });
    expect(speakers?.dominant(0, 1_999)).toBeNull();
  });

  it("stops listening when the call ends and reports its last final before the recording stops and DONE", async () => {
    const bot = setUp({ noOneJoinedTimeout: LONG }, live);
    bot.start();
    await elapse(5_000);
    bot.stage.watcher.update(snap("ended"));
    await elapse(1_000);
    expect(bot.outcome()).toBeUndefined();
    expect(bot.stage.recording?.stopped).toBe(false);
    await elapse(500);
    expect(bot.outcome()).toEqual({ status: "DONE" });
    const types = bot.eventTypes();
    const final = types.indexOf("transcript.final");
    expect(final).toBeGreaterThan(
      bot.reported.findIndex((e) => e.type === "status" && e.data.status === "CALL_ENDED"),
    );
    expect(final).toBeLessThan(types.indexOf("recording.stopped"));
    expect(types.filter((type) => type === "transcript.final")).toHaveLength(1);
  });

  it("captions the bot cannot turn on: unavailable, then pocketsphinx stands in only when fallback is asked", async () => {
    const plain = setUp({ noOneJoinedTimeout: LONG }, { liveTranscript: { source: "captions" } });
    plain.start();
    await elapse(1_000);
    const sources = (bot: ReturnType<typeof setUp>) =>
      bot.reported.flatMap((e) =>
        e.type === "transcript.source" ? [`${e.data.source} ${e.data.state}`] : [],
      );
    expect(sources(plain)).toEqual(["captions unavailable"]);
    expect(plain.stage.live).toBeNull();

    const bot = setUp(
      { noOneJoinedTimeout: LONG },
      { liveTranscript: { source: "captions", fallback: true } },
    );
    bot.start();
    await elapse(1_000);
    expect(sources(bot)).toEqual(["captions unavailable"]);
    expect(bot.stage.liveAs).toBe("fallback");
    expect(bot.stage.live?.context.options).toMatchObject({ source: "pocketsphinx", fallback: true });
  });

  it("a stop asked as the bot gets in starts no captions or chat: it only leaves", async () => {
    const bot = setUp({ noOneJoinedTimeout: LONG }, { liveTranscript: { source: "captions" } });
    bot.adapter.join.mockImplementationOnce(async () => {
      bot.stage.watcher.update(snap("in_call", [ALICE]));
      bot.lifecycle.requestStop();
    });
    bot.start();
    await elapse(1_000);
    expect(bot.statuses()).toEqual([...RECORDED, "CALL_ENDED LEFT_ON_REQUEST", "DONE"]);
    expect(bot.reported.filter((e) => e.type === "transcript.source")).toEqual([]);
  });

  it("a bot that fails mid-call still reports its last final before FATAL", async () => {
    const bot = setUp({ noOneJoinedTimeout: LONG }, live);
    bot.start();
    await elapse(5_000);
    bot.stage.crash?.("the page crashed");
    await elapse(1_500);
    expect(bot.statuses()).toEqual([...RECORDED, "FATAL BROWSER_CRASHED"]);
    expect(bot.eventTypes().slice(-3)).toEqual(["transcript.final", "recording.stopped", "status"]);
  });
});
