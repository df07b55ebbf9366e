import { describe, expect, it } from "vitest";
import { DEFAULT_BOT_NAMES } from "../../src/core/index.js";
import { botNameMatcher } from "../../src/runner/other-bots.js";

describe("botNameMatcher", () => {
  const isBot = botNameMatcher(DEFAULT_BOT_NAMES);

  it.each([
    "Otter.ai",
    "Fireflies.ai Notetaker",
    "Alice's Notetaker",
    "Read.ai meeting notes",
    "tl;dv Recorder",
    "FATHOM",
    "Sales Bot",
    "Meeting note taker",
  ])("%s is a bot", (name) => {
    expect(isBot(name)).toBe(true);
  });

  it.each(["Scotter Jones", "Abbott Smith", "Botond Nagy", "Alice Example", "Otterbein", "Bread.aid", ""])(
    "%s is a person",
    (name) => {
      expect(isBot(name)).toBe(false);
    },
  );

  it("matches the words given, case-insensitive, with their punctuation taken literally", () => {
    const custom = botNameMatcher(["scribe", "a.b"]);
    expect(custom("Team SCRIBE")).toBe(true);
    expect(custom("a.b helper")).toBe(true);
    expect(custom("axb helper")).toBe(false);
    expect(custom("Otter.ai")).toBe(false);
  });

  it("an empty list makes nobody a bot", () => {
    expect(botNameMatcher([])("Otter.ai")).toBe(false);
  });
});
