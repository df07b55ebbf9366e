import { describe, expect, it, vi } from "vitest";
import { runDemo } from "../../src/demo.js";

/** `make demo`, the README's first command, as a test: the whole story on this machine. */
describe("meetbot demo", () => {
  it(
    "joins, records, delivers signed webhooks up to bot.ended, and exits 0",
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
      expect(output).toContain("demo OK");
    },
  );
});
