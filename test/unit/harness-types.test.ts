/**
 * The test harness's answers are typed from the server's own response schemas
 * (src/server/schemas/responses.ts, src/notes/responses.ts): a test reading a field a schema does
 * not have fails to compile. tsc checks this file (test files are in tsconfig.json); the
 * `@ts-expect-error` lines fail the compile if the harness ever types answers loosely again.
 * The readers below are never called: only their types matter.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import type { NotesApiResponses } from "../../src/notes/responses.js";
import {
  type Api,
  type ApiResponse,
  defined,
  errorDetail,
  type ErrorFields,
  validationIssues,
} from "../helpers/server-harness.js";

const botOf = async (api: Api, id: number) => (await api.get(`/v1/bots/${id}`)).body;
const botListOf = async (api: Api) => (await api.get("/v1/bots?page=2&status=DONE")).body;
const botApiWebhooksOf = async (api: Api) => (await api.get("/v1/webhooks")).body;
const notesWebhooksOf = async (notes: Api<NotesApiResponses>) => (await notes.get("/v1/webhooks")).body;
const fileOf = async (api: Api, id: number) => (await api.get(`/v1/recordings/${id}/file`)).body;
const statedOf = (api: Api, id: number) => api.request<{ size: number }>("GET", `/v1/recordings/${id}/file`);
const anyPathOf = async (api: Api, path: string) => (await api.get(path)).body;

async function madeUpField(api: Api, id: number) {
  const bot = await botOf(api, id);
  // @ts-expect-error -- BotDetail has no `state`: reading it must not compile.
  return bot.state;
}

async function unlistedRoute(api: Api, id: number) {
  const file = await fileOf(api, id);
  // @ts-expect-error -- an unlisted route's answer is unknown until the test states its shape.
  return file.length;
}

describe("the harness's answer types", () => {
  it("types a bot's answer by its schema, with the spec's error fields", () => {
    type Bot = Awaited<ReturnType<typeof botOf>>;
    expectTypeOf<Bot>().toHaveProperty("status");
    expectTypeOf<Bot["status"]>().toExtend<string>();
    expectTypeOf<Bot["id"]>().toEqualTypeOf<number>();
    expectTypeOf<Bot>().toHaveProperty("detail");
    expectTypeOf<Bot>().not.toHaveProperty("state");
    expectTypeOf(madeUpField).toBeFunction();
  });

  it("picks the operation from a path with a query", () => {
    expectTypeOf(botListOf).returns.resolves.toHaveProperty("bots").items.toHaveProperty("meetingTitle");
  });

  it("types each interface by its own map: /v1/webhooks differs between them", () => {
    expectTypeOf(botApiWebhooksOf).returns.resolves.toHaveProperty("webhooks");
    expectTypeOf(notesWebhooksOf).returns.resolves.toHaveProperty("data");
    expectTypeOf(notesWebhooksOf).returns.resolves.not.toHaveProperty("webhooks");
  });

  it("leaves unlisted routes and paths known only as a string unknown", () => {
    expectTypeOf(fileOf).returns.resolves.toBeUnknown();
    expectTypeOf(anyPathOf).returns.resolves.toBeUnknown();
    expectTypeOf(unlistedRoute).toBeFunction();
  });

  it("has request<T> as the escape hatch where a test states the shape", () => {
    expectTypeOf(statedOf).returns.resolves.toEqualTypeOf<ApiResponse<{ size: number }>>();
  });
});

describe("the harness's narrowing helpers", () => {
  it("defined returns a present value and throws naming what is missing", () => {
    expect(defined(0, "zero")).toBe(0);
    expect(() => defined(undefined, "the bot")).toThrow("the bot is missing");
    expect(() => defined(null, "deploymentError")).toThrow("deploymentError is missing");
  });

  it("validationIssues returns a 422's issues and refuses any other body", () => {
    const issue = { loc: ["body", "name"], msg: "Field required", type: "missing" };
    expect(validationIssues({ detail: [issue] })).toEqual([issue]);
    expect(() => validationIssues({ detail: "Bot not found" })).toThrow(/not a validation error/);
    expect(() => validationIssues(null)).toThrow(/not a validation error/);
  });

  it("errorDetail returns a string detail and refuses a list of issues", () => {
    const body: ErrorFields = { detail: "Bot not found" };
    expect(errorDetail(body)).toBe("Bot not found");
    expect(() => errorDetail({ detail: [] })).toThrow(/not an error with a message/);
    expect(() => errorDetail("plain text")).toThrow(/not an error with a message/);
  });
});
