import { describe, expect, it, vi } from "vitest";
import { runDemo } from "../../src/demo.js";

/** `make demo`, the README's first command, as a test: the whole story on this machine. */
describe("meetbot demo", () => {
  it(
    "joins, records, delivers signed webhooks up to bot.ended, prints the meeting's notes, and exits 0",
    { timeout: 150_000 },
    async () => {
      const lines: string[] = [];
      const write = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
        lines.push(String(chunk));
        return true;
      });
      let code: number;
      try {
        code = await runDemo();
      } finally {
        write.mockRestore();
      }
      const output = lines.join("");
      expect(code, output).toBe(0);
      expect(output).toContain("status DONE");
      for (const event of ["bot.deploying", "bot.joined", "recording.ready", "bot.ended"]) {
        expect(output).toMatch(new RegExp(`webhook ${event.replace(".", "\\.")} \\(signed whdel_`));
      }
      expect(output).toMatch(/webhooks: \d+ deliveries to the callbackUrl, every signature verified/);
      // It ends with the meeting as the meeting-notes interface serves it.
      expect(output).toMatch(/summary completed( 100%)?\n/);
      expect(output).toMatch(/meeting mtg_[0-9a-f]{24} from http:\/\/127\.0\.0\.1:\d+\/v1\/meetings\n/);
      expect(output).toMatch(/ {2}"Demo meeting", \d{4}-\d\d-\d\dT[\d:.]+Z, \d+ s\n/);
      expect(output).toMatch(/participants: .*Alice Example \(spoke [\d.]+ s\).*Bob Example/);
      const transcript = [...output.matchAll(/ {4}\[(\d\d):(\d\d)\] ([^:\n]+): (.+)\n/g)];
      expect(transcript.map((m) => m[3])).toEqual(expect.arrayContaining(["Alice Example", "Bob Example"]));
      expect(transcript.map((m) => m[4]).join(" ")).toMatch(/budget review/i);
      expect(output).toMatch(/ {4}overview: \S/);
      expect(output).toMatch(
        / {4}action item: .*\bsend\b.*\breport\b.* \(owner: Alice Example, due: tomorrow\)\n/i,
      );
      expect(output).toMatch(/ {4}decision: we decided\b.*\bmeeting to monday\b/i);
      expect(output).toContain("demo OK");
    },
  );
});
