/**
 * `make bench`: the bot's camera. A real bot (runner, Chromium, the control plane)
 * is in a mock Meet call whose page sees the bot's camera as a real meeting does (its average
 * colour, posted every 500 ms). Prints:
 *
 * - `POST /v1/bots/{id}/output-image` → the meeting sees the new picture's colour, p50/p95/max
 *   over BENCH_PICTURES pictures of alternating colours (the server's decode, the runner's poll,
 *   the picture's fetch and painting; the camera is on already). The page reports every 500 ms,
 *   so each figure is late by up to that;
 * - the CPU the bot's process tree uses with the camera off and while it shows a picture, and the
 *   difference. The mock page runs in the bot's own Chromium and its sender (a draw every
 *   500 ms, a PNG every 3 s) is in the figure too: a real platform's encoder would be instead.
 *
 * Figures only; asserts nothing.
 */
import { execFileSync } from "node:child_process";
import { startMockHost } from "../fixtures/host/server.js";
import { startBenchServer } from "./bench-server.js";
import { sampleTree } from "./process-tree.js";
import { figures } from "./figures.js";

const PICTURES = Number(process.env.BENCH_PICTURES ?? 8);
const CPU_SAMPLE_MS = 10_000;
const COLOURS = { red: "0xff0000", blue: "0x0000ff" } as const;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A 1280x720 PNG of one colour, made by ffmpeg. */
const png = (colour: string) =>
  execFileSync("ffmpeg", [
    ...["-loglevel", "error", "-f", "lavfi", "-i", `color=c=${colour}:s=1280x720`],
    ...["-frames:v", "1", "-f", "image2", "-c:v", "png", "-"],
  ]);

interface Camera {
  on: boolean;
  color: { r: number; g: number; b: number } | null;
}

async function main() {
  const pictures = { red: png(COLOURS.red), blue: png(COLOURS.blue) };
  const mock = await startMockHost({ port: 0 });
  const { api, launcher, close } = await startBenchServer(mock.url);
  const code = "pic-bnch-abc";
  const control = (suffix: string, init?: RequestInit) =>
    fetch(`${mock.url}/control/meetings/google/${code}${suffix}`, init).then((r) => r.json());
  const camera = async () =>
    ((await control("")) as { attendees: Array<{ camera: Camera }> }).attendees[0]?.camera;
  const until = async (check: (c: Camera) => boolean) => {
    for (;;) {
      const seen = await camera();
      if (seen && check(seen)) return;
      await sleep(50);
    }
  };
  try {
    await control("", {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ admit: "open", participants: 1, media: "silent" }),
    });
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}` },
      botDisplayName: "Bench Picture",
    });
    await api.deploy(bot.id);
    await api.waitForStatus(bot.id, ["IN_CALL"], { timeoutMs: 90_000 });
    await sleep(3_000); // the recording and roster settle

    const pid = launcher.pid(bot.id);
    const off = pid ? await sampleTree(pid, CPU_SAMPLE_MS) : null;

    const seenAfter: number[] = [];
    for (let i = 0; i < PICTURES; i++) {
      const colour = i % 2 === 0 ? "red" : "blue";
      const asked = Date.now();
      await api.showImage(bot.id, pictures[colour], "image/png");
      await until((c) => c.on && c.color !== null && (colour === "red" ? c.color.r > 200 : c.color.b > 200));
      seenAfter.push(Date.now() - asked);
    }
    console.log(`output-image → the meeting sees the picture: ${figures(seenAfter)}`);

    if (pid && off) {
      const on = await sampleTree(pid, CPU_SAMPLE_MS);
      console.log(
        `bot process tree: ${off.cores.toFixed(2)} cores camera off, ${on.cores.toFixed(2)} showing a picture ` +
          `(the camera adds ${(on.cores - off.cores).toFixed(2)}, the mock page's sender included)`,
      );
    }
    await api.leave(bot.id);
    await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
  } finally {
    await close();
    await mock.close();
  }
}

await main();
