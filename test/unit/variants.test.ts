import { describe, expect, it } from "vitest";
import { exactly } from "../../platforms/variants.js";

describe("exactly", () => {
  it("matches any of its texts whole, their special characters as themselves", () => {
    const pattern = exactly(["Got it", "OK (1)"]);
    expect(["Got it", "OK (1)"].map((text) => pattern.test(text))).toEqual([true, true]);
    expect(["Got it!", "got it", "OK 1", "OK (1) now"].map((text) => pattern.test(text))).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });

  it("matches nothing without texts, not even an icon-only button's empty name", () => {
    const pattern = exactly([]);
    expect(["", "Leave", " "].map((text) => pattern.test(text))).toEqual([false, false, false]);
  });
});
