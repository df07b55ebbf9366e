import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MeetingInfo } from "../../src/core/index.js";
import { IdParam, RequestValidationError } from "../../src/server/validation.js";

const detail = (schema: z.ZodType, data: unknown, context = "body") => {
  const result = schema.safeParse(data, { reportInput: true });
  if (result.success) throw new Error("expected a validation error");
  const err = new RequestValidationError(result.error.issues);
  err.validationContext = context;
  return err.toDetail();
};

describe("RequestValidationError.toDetail", () => {
  const Body = z.object({ meetingInfo: MeetingInfo, tags: z.array(z.string()).optional() });

  it("maps a missing field to type missing with its full loc", () => {
    expect(detail(Body, { meetingInfo: {} })).toEqual([
      { loc: ["body", "meetingInfo", "platform"], msg: "Field required", type: "missing" },
    ]);
  });

  it("keeps zod's code as type, custom rules as value_error, and array indexes as numbers", () => {
    expect(detail(Body, { meetingInfo: { platform: "google" }, tags: ["a", 3] })).toEqual(
      expect.arrayContaining([{ loc: ["body", "tags", 1], msg: expect.any(String), type: "invalid_type" }]),
    );
    expect(detail(Body, { meetingInfo: { platform: "google" } })).toEqual([
      {
        loc: ["body", "meetingInfo", "meetingUrl"],
        msg: "meetingUrl is required for platform google",
        type: "value_error",
      },
    ]);
  });

  it("names the request part: query and path", () => {
    expect(
      detail(z.object({ page: z.coerce.number().min(1) }), { page: "0" }, "querystring")[0]?.loc,
    ).toEqual(["query", "page"]);
    expect(detail(z.object({ id: IdParam }), { id: "abc" }, "params")[0]?.loc).toEqual(["path", "id"]);
  });

  it("reports an absent body as missing at loc body", () => {
    expect(detail(Body, null)).toEqual([{ loc: ["body"], msg: "Field required", type: "missing" }]);
  });
});

describe("IdParam", () => {
  it("accepts positive decimal integers only", () => {
    expect(IdParam.parse("42")).toBe(42);
    for (const bad of ["0", "-1", "1e3", "0x10", " 1", "1.0", "", "99999999999999999"]) {
      expect(IdParam.safeParse(bad).success, bad).toBe(false);
    }
  });
});
