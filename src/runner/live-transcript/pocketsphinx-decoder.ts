import type { ChildProcess } from "node:child_process";
import { closeSync, constants, openSync, rmSync, writeSync } from "node:fs";
import { access } from "node:fs/promises";
import { Socket } from "node:net";
import path from "node:path";
import { createInterface } from "node:readline";
import { DEFAULT_MODEL_DIR } from "../../intelligence/pocketsphinx.js";
import { runToEnd, spawnTied, tailOutput, terminate, waitForExit } from "../../media/processes.js";

/** Decodes stretches of raw audio files, one at a time. */
export interface Decoder {
  /**
   * The words pocketsphinx hears in `name` (a file of 16 kHz mono s16le PCM in the decoder's
   * folder) from frame `fromFrame` to `toFrame` (10 ms frames); "" for none. Rejects when the
   * decoder failed (it starts afresh on the next call).
   */
  decode(name: string, fromFrame: number, toFrame: number): Promise<string>;
  close(): Promise<void>;
}

const BINARY = "pocketsphinx_batch";

interface Running {
  child: ChildProcess;
  /** The control FIFO, open for writing requests. */
  ctl: number;
  /** Closes both FIFOs (the decoder then ends) and removes them. */
  close(): void;
}
export const FRAMES_PER_SECOND = 100;
/** A decode of a few seconds takes ~0.1-0.3 s of CPU; one this late is stuck. */
const DECODE_TIMEOUT_BASE_MS = 10_000;

/** The one decode under way. */
interface Pending {
  id: string;
  /** The process it was sent to, once it was. */
  process?: Running;
  resolve(text: string): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

/** Why the model cannot be used (a file missing), or null when it is all there. */
export async function missingModel(modelDir = DEFAULT_MODEL_DIR): Promise<string | null> {
  for (const part of ["en-us", "en-us.lm.bin", "cmudict-en-us.dict"]) {
    try {
      await access(path.join(modelDir, part));
    } catch {
      return `the pocketsphinx model is incomplete: ${path.join(modelDir, part)} is missing (install pocketsphinx-en-us)`;
    }
  }
  return null;
}

/**
 * One long-lived `pocketsphinx_batch`: it loads the model once (~0.4 s of CPU, ~100 MB) and then
 * decodes whatever its control file names, line by line. The control file is a FIFO we hold open,
 * so each line we write is one decode request (`file startFrame endFrame id`), and it blocks for
 * the next; it answers in its hypothesis file, another FIFO, with `words (id score)`, flushed
 * after each (measured). FIFOs, not its stdin and stdout: Node's child pipes are socket pairs,
 * which `/dev/stdin` cannot be opened on (ENXIO). The audio file may still be growing: the end
 * frame bounds what is read.
 *
 * First pass only (`-fwdflat no -bestpath no`): ~25 % less CPU than the full three passes for
 * about the same word accuracy (12 flite lines after AAC: 0.947 against 0.962, measured); the live
 * transcript is a preview (the full decode of the recording can be asked for after the call). Tighter pruning
 * (`-ds 2 -maxhmmpf 3000`) would save another ~40 % of CPU but cost 2-3 points on clean lines
 * and ~5 on the bot's own sound (bench/live-pocketsphinx.ts), where accuracy is short already.
 */
export class PocketsphinxDecoder implements Decoder {
  private running: Promise<Running> | null = null;
  private starts = 0;
  private pending: Pending | null = null;
  private nextId = 1;

  constructor(
    private readonly dir: string,
    private readonly modelDir = DEFAULT_MODEL_DIR,
  ) {}

  async decode(name: string, fromFrame: number, toFrame: number): Promise<string> {
    if (this.pending) throw new Error("the decoder is busy");
    const id = `d${this.nextId++}`;
    const seconds = (toFrame - fromFrame) / FRAMES_PER_SECOND;
    let pending!: Pending;
    const answer = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.settle(new Error(`${BINARY} took too long for ${seconds.toFixed(1)} s of audio`));
          // The next request starts a fresh one.
          this.running = null;
          if (pending.process) void terminate(pending.process.child, 500);
        },
        DECODE_TIMEOUT_BASE_MS + seconds * 3_000,
      );
      pending = { id, resolve, reject, timer };
    });
    this.pending = pending;
    try {
      this.running ??= this.start();
      const process = await this.running;
      if (this.pending !== pending) return answer;
      pending.process = process;
      writeSync(process.ctl, `${name} ${fromFrame} ${toFrame} ${id}\n`);
    } catch (error) {
      if (this.pending === pending) this.settle(error as Error);
    }
    return answer;
  }

  async close(): Promise<void> {
    const starting = this.running;
    this.running = null;
    const process = await starting?.catch(() => null);
    if (!process) return;
    // The end of its control file is the end of its work.
    process.close();
    const exited = waitForExit(process.child);
    const timer = setTimeout(() => void terminate(process.child, 500), 2_000);
    await exited;
    clearTimeout(timer);
  }

  private async start(): Promise<Running> {
    const model = this.modelDir;
    this.starts += 1;
    const ctlPath = path.join(this.dir, `decoder-${this.starts}.ctl`);
    const hypPath = path.join(this.dir, `decoder-${this.starts}.hyp`);
    await runToEnd("mkfifo", ["-m", "600", ctlPath, hypPath]);
    // Read and write, so that neither open waits for the other side, and the decoder never sees
    // the end of its control file before we close it.
    const ctl = openSync(ctlPath, constants.O_RDWR);
    const hyp = openSync(hypPath, constants.O_RDWR | constants.O_NONBLOCK);
    const answers = new Socket({ fd: hyp, readable: true, writable: false });
    createInterface({ input: answers }).on("line", (line) => this.onLine(line));
    const child = spawnTied(
      BINARY,
      [
        ...["-adcin", "yes", "-cepdir", this.dir, "-cepext", ".raw"],
        ...["-ctl", ctlPath, "-hyp", hypPath, "-logfn", "/dev/null"],
        ...["-hmm", path.join(model, "en-us"), "-lm", path.join(model, "en-us.lm.bin")],
        ...["-dict", path.join(model, "cmudict-en-us.dict")],
        ...["-fwdflat", "no", "-bestpath", "no"],
      ],
      { stdio: ["ignore", "pipe", "pipe"], deathSignal: "KILL" },
    );
    const output = tailOutput(child, 10);
    let closed = false;
    const process: Running = {
      child,
      ctl,
      close: () => {
        if (closed) return;
        closed = true;
        closeSync(ctl);
        answers.destroy();
        rmSync(ctlPath, { force: true });
        rmSync(hypPath, { force: true });
      },
    };
    const starting = this.running;
    // A request sent to this process (or waiting for it to start) fails with it.
    const failed = (error: Error) => {
      process.close();
      if (this.running === starting) this.running = null;
      const pending = this.pending;
      if (pending && (pending.process === process || !pending.process)) this.settle(error);
    };
    child.once("error", (error) => failed(new Error(`${BINARY} could not be started: ${error.message}`)));
    void waitForExit(child).then((code) => {
      // setpriv answers 127 when it cannot run the program: not installed.
      const why = code === 127 ? "not installed (install pocketsphinx)" : `exited with ${code}`;
      failed(new Error(`${BINARY} ${why}: ${output()}`));
    });
    return process;
  }

  private onLine(line: string): void {
    const match = /^(.*) \((\S+) -?\d+\)$/.exec(line);
    if (!match || match[2] !== this.pending?.id) return;
    this.settle(null, match[1] ?? "");
  }

  private settle(error: Error | null, text = ""): void {
    const pending = this.pending;
    if (!pending) return;
    this.pending = null;
    clearTimeout(pending.timer);
    if (error) pending.reject(error);
    else pending.resolve(text.trim());
  }
}
