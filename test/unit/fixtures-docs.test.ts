import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { UI_VARIANTS } from "../../fixtures/host/scenario.js";

/** The drifted layouts a mock knows are the ones fixtures/README.md documents. */
describe("fixtures/README.md", () => {
  const readme = readFileSync(new URL("../../fixtures/README.md", import.meta.url), "utf8");
  const documented = [...readme.matchAll(/^\| (google|zoom|teams) +\| `([a-z0-9-]+)`/gm)].map(
    ([, platform, name]) => `${platform} ${name}`,
  );
  const known = Object.entries(UI_VARIANTS).flatMap(([platform, list]) =>
    list.map((variant) => `${platform} ${variant.name}`),
  );

  it("lists every ui variant, and no other, under its platform", () => {
    expect(documented.sort()).toEqual(known.sort());
  });

  it("has at least three drifted layouts per platform", () => {
    for (const list of Object.values(UI_VARIANTS)) expect(list.length).toBeGreaterThanOrEqual(3);
  });
});
