import { describe, expect, it } from "vitest";
import { BOT_STATUSES, canTransition, isTerminal, TRANSITIONS } from "../../src/core/index.js";

describe("bot status transitions", () => {
  it("follows the happy path DEPLOYING → JOINING_CALL → IN_WAITING_ROOM → IN_CALL → CALL_ENDED → DONE", () => {
    const path = [
      "READY_TO_DEPLOY",
      "DEPLOYING",
      "JOINING_CALL",
      "IN_WAITING_ROOM",
      "IN_CALL",
      "CALL_ENDED",
      "DONE",
    ];
    for (let i = 1; i < path.length; i++) {
      expect(canTransition(path[i - 1] as never, path[i] as never), `${path[i - 1]} -> ${path[i]}`).toBe(
        true,
      );
    }
  });

  it("allows skipping the waiting room", () => {
    expect(canTransition("JOINING_CALL", "IN_CALL")).toBe(true);
  });

  it("lets every running status fail, but nothing leaves a terminal status", () => {
    for (const status of BOT_STATUSES) {
      if (status === "READY_TO_DEPLOY") continue;
      expect(canTransition(status, "FATAL")).toBe(!isTerminal(status));
    }
    expect(TRANSITIONS.DONE).toEqual([]);
    expect(TRANSITIONS.FATAL).toEqual([]);
  });

  it("refuses moves backwards or skipping the call", () => {
    expect(canTransition("IN_CALL", "JOINING_CALL")).toBe(false);
    expect(canTransition("JOINING_CALL", "CALL_ENDED")).toBe(false);
    expect(canTransition("DEPLOYING", "DONE")).toBe(false);
    expect(canTransition("IN_CALL", "IN_CALL")).toBe(false);
  });
});
