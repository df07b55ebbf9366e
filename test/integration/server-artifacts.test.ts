import { describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import { deployedBot, registerUser, type TestServer, type TestUser } from "../helpers/server-harness.js";

let server: TestServer;
let owner: TestUser;
let stranger: TestUser;
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  owner = await registerUser(server.api);
  stranger = await registerUser(server.api);
});

const html = new TextEncoder().encode("<html><script>alert(1)</script>Someone denied you</html>");

describe("failure artifacts", () => {
  test("are uploaded by the bot's runner, listed in deploymentError, and served to the owner as downloads", async () => {
    const { botId, config, runner } = await deployedBot(server, owner);
    const put = (name: string, token = config.callback.token, contentType = "application/octet-stream") =>
      server.api.put(`/v1/bot-callbacks/${botId}/artifacts/${name}`, {
        rawBody: html,
        token,
        headers: { "content-type": contentType },
      });
    expect((await put("failure.html")).status).toBe(201);
    await runner.status("JOINING_CALL");
    await runner.status("FATAL", {
      subCode: "ADMISSION_DENIED",
      message: "denied",
      artifacts: ["failure.html"],
    });

    const bot = await server.api.get(`/v1/bots/${botId}`, { token: owner.token });
    expect(bot.body.deploymentError).toEqual({
      code: "ADMISSION_DENIED",
      message: "denied",
      artifacts: [`/v1/bots/${botId}/artifacts/failure.html`],
    });
    const res = await fetch(`${server.url}/v1/bots/${botId}/artifacts/failure.html`, {
      headers: { authorization: `Bearer ${owner.token}` },
    });
    expect(res.status).toBe(200);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(html);
    // Captured from a third-party page: never rendered as part of this origin.
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="failure.html"');
    expect(res.headers.get("content-security-policy")).toBe("sandbox");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });

  test("refuses a wrong token, a bad name, a wrong content type; hides them from other users", async () => {
    const { botId, config } = await deployedBot(server, owner);
    const put = (name: string, token: string, contentType = "application/octet-stream") =>
      server.api.put(`/v1/bot-callbacks/${botId}/artifacts/${name}`, {
        rawBody: html,
        token,
        headers: { "content-type": contentType },
      });
    expect((await put("failure.png", "not-the-token-of-this-bot")).status).toBe(401);
    expect((await put("..%2Fescape", config.callback.token)).status).toBe(422);
    expect((await put("Upper.png", config.callback.token)).status).toBe(422);
    expect((await put("failure.png", config.callback.token, "text/html")).status).toBe(415);
    expect((await put("failure.png", config.callback.token)).status).toBe(201);

    const get = (token: string) => server.api.get(`/v1/bots/${botId}/artifacts/failure.png`, { token });
    expect((await get(stranger.token)).status).toBe(404);
    expect((await server.api.get(`/v1/bots/${botId}/artifacts/failure.png`)).status).toBe(401);
    expect(
      (await server.api.get(`/v1/bots/${botId}/artifacts/missing.png`, { token: owner.token })).status,
    ).toBe(404);
  });
});
