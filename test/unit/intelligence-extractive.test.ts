import { describe, expect, it } from "vitest";
import { duePhrase, extractiveSummarizer, splitSentences } from "../../src/intelligence/extractive.js";
import type { Summary, Utterance } from "../../src/intelligence/types.js";

const ALICE = { participantId: "p-a", name: "Alice Martin" };
const BOB = { participantId: "p-b", name: "Bob Chen" };

/** An utterance as attribution makes it: words 300 ms apart, no pauses unless `pauseAfter` says so. */
function said(
  speaker: Utterance["speaker"],
  startMs: number,
  text: string,
  pauseAfter: number[] = [],
): Utterance {
  let at = startMs;
  const words = text.split(" ").map((part, i) => {
    const word = { text: part, startMs: at, endMs: at + 250, confidence: 0.9 };
    at += pauseAfter.includes(i) ? 1200 : 300;
    return word;
  });
  return { speaker, startMs, endMs: words.at(-1)!.endMs, text, confidence: 0.9, words };
}

const summarize = (utterances: Utterance[], meetingTitle?: string): Promise<Summary> =>
  extractiveSummarizer().summarize({ utterances, meetingTitle });

/** A planning meeting as a provider writes it: cased and punctuated. */
const PUNCTUATED: Utterance[] = [
  said(ALICE, 0, "Good morning, everyone. Thanks for joining."),
  said(
    ALICE,
    4_000,
    "The payment screen failed three tests last week. The payment provider changed its error codes, and the payment screen does not handle them.",
  ),
  said(BOB, 15_000, "I will fix the payment screen error handling by Friday."),
  said(ALICE, 20_000, "Bob, can you also check the server logs before the end of the day?"),
  said(BOB, 25_000, "Sure. Alice will send the release notes to the customer tomorrow."),
  said(ALICE, 30_000, "We decided to ship the new version of the payment screen next Tuesday."),
  said(BOB, 35_000, "Let's go with the simpler design for the settings page."),
  said(ALICE, 40_000, "We need to update the payment documentation before the release."),
];

/** The same kind of meeting as pocketsphinx writes it: lower case, no punctuation. */
const POCKETSPHINX: Utterance[] = [
  said(ALICE, 0, "good morning everyone thanks for joining the weekly planning meeting", [4]),
  said(
    ALICE,
    5_000,
    "the testing team found three problems in the payment screen last week the payment provider changed the error codes i will send the report to the whole team tomorrow",
  ),
  said(BOB, 20_000, "can you check the server logs before the end of the day alice"),
  said(ALICE, 25_000, "sure we decided to ship the new version on friday"),
  said(BOB, 30_000, "bob will update the payment documentation next week"),
];

describe("extractive summarizer on a punctuated transcript", () => {
  it("finds the commitments with their owners, due phrases and times", async () => {
    const { actionItems } = await summarize(PUNCTUATED);
    expect(actionItems).toEqual([
      {
        text: "Fix the payment screen error handling by Friday",
        owner: "Bob Chen",
        due: "by Friday",
        startMs: 15_000,
      },
      {
        text: "Also check the server logs before the end of the day",
        owner: "Bob Chen",
        due: "before the end of the day",
        startMs: 20_000,
      },
      {
        text: "Send the release notes to the customer tomorrow",
        owner: "Alice Martin",
        due: "tomorrow",
        startMs: 25_000,
      },
      {
        text: "Update the payment documentation before the release",
        owner: "Alice Martin",
        due: null,
        startMs: 40_000,
      },
    ]);
  });

  it("finds the decisions", async () => {
    const { decisions } = await summarize(PUNCTUATED);
    expect(decisions).toEqual([
      "We decided to ship the new version of the payment screen next Tuesday.",
      "Let's go with the simpler design for the settings page.",
    ]);
  });

  it("picks the sentences carrying the meeting's topic as key points, in the order said", async () => {
    const { keyPoints } = await summarize(PUNCTUATED);
    expect(keyPoints.length).toBeGreaterThan(0);
    expect(keyPoints.length).toBeLessThanOrEqual(5);
    expect(keyPoints).not.toContain("Good morning, everyone.");
    expect(keyPoints).not.toContain("Sure.");
    expect(keyPoints[0]).toBe("The payment screen failed three tests last week.");
    const order = keyPoints.map((point) =>
      PUNCTUATED.findIndex((u) => u.text.includes(point.replace(/\.$/, ""))),
    );
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  it("opens the overview with the participants and the main topic", async () => {
    const { overview } = await summarize(PUNCTUATED, "Release planning");
    expect(overview).toMatch(
      /^Alice Martin and Bob Chen in "Release planning" discussed payment, screen and /,
    );
  });
});

describe("extractive summarizer on pocketsphinx's lower-case, unpunctuated text", () => {
  it("cuts sentences at commitments and finds owner and due phrase", async () => {
    const { actionItems } = await summarize(POCKETSPHINX);
    expect(actionItems).toEqual([
      {
        text: "Send the report to the whole team tomorrow",
        owner: "Alice Martin",
        due: "tomorrow",
        startMs: 5_000 + 19 * 300,
      },
      {
        text: "Check the server logs before the end of the day",
        owner: "Alice Martin",
        due: "before the end of the day",
        startMs: 20_000,
      },
      {
        text: "Update the payment documentation next week",
        owner: "Bob Chen",
        due: "next week",
        startMs: 30_000,
      },
    ]);
  });

  it("finds the decision inside an utterance", async () => {
    const { decisions } = await summarize(POCKETSPHINX);
    expect(decisions).toEqual(["We decided to ship the new version on friday."]);
  });

  it("writes key points as sentences: capitalized, 'I' upper case, a full stop", async () => {
    const { keyPoints } = await summarize(POCKETSPHINX);
    expect(keyPoints.length).toBeGreaterThan(0);
    for (const point of keyPoints) expect(point).toMatch(/^[A-Z].*\.$/);
    expect(keyPoints.join(" ")).toContain("I will send the report to the whole team tomorrow.");
  });

  it("takes the owner of 'can you' from the name said, not the speaker", async () => {
    const { actionItems } = await summarize([
      said(ALICE, 0, "hello bob"),
      said(BOB, 1000, "alice can you review the budget tomorrow"),
    ]);
    expect(actionItems[0]).toMatchObject({
      owner: "Alice Martin",
      due: "tomorrow",
      text: "Review the budget tomorrow",
    });
  });

  it("leaves the owner of 'can you' unknown when nobody is named", async () => {
    const { actionItems } = await summarize([said(BOB, 0, "could you please review the budget on monday")]);
    expect(actionItems).toEqual([
      { text: "Review the budget on monday", owner: null, due: "on monday", startMs: 0 },
    ]);
  });
});

describe("commitments", () => {
  const one = async (speaker: Utterance["speaker"], text: string, others: Utterance[] = []) =>
    (await summarize([...others, said(speaker, 60_000, text)])).actionItems;

  it("knows a first name said alone and a full name", async () => {
    const intro = [said(ALICE, 0, "hello"), said(BOB, 1000, "hi")];
    expect((await one(ALICE, "Bob will book the room.", intro))[0]?.owner).toBe("Bob Chen");
    expect((await one(ALICE, "bob chen will book the room", intro))[0]?.owner).toBe("Bob Chen");
  });

  it("does not take 'it will' or an unknown name for a person", async () => {
    expect(await one(ALICE, "It will rain tomorrow.")).toEqual([]);
    expect(await one(ALICE, "Carol will book the room.")).toEqual([]);
  });

  it("takes the speaker for I'll, let's and we need to", async () => {
    expect((await one(BOB, "I'll write the test plan."))[0]).toMatchObject({
      owner: "Bob Chen",
      text: "Write the test plan",
    });
    expect((await one(BOB, "Let's review the budget on Monday."))[0]).toMatchObject({
      owner: "Bob Chen",
      due: "on Monday",
    });
    expect((await one(BOB, "We need to hire a designer."))[0]).toMatchObject({
      owner: "Bob Chen",
      due: null,
    });
  });

  it("is unowned when the speaker is unknown", async () => {
    expect((await one(null, "I will send the invite."))[0]).toMatchObject({
      owner: null,
      text: "Send the invite",
    });
  });

  it("ignores meeting chatter that looks like a request", async () => {
    expect(await one(BOB, "Can you hear me?")).toEqual([]);
    expect(await one(BOB, "Can you see my screen?")).toEqual([]);
    expect(await one(BOB, "Let's get started.")).toEqual([]);
    expect(await one(BOB, "Let me know.")).toEqual([]);
    expect(await one(BOB, "I will be out next week.")).toEqual([]);
  });

  it("takes a due phrase said before the commitment", async () => {
    expect((await one(BOB, "Tomorrow I will call the vendor."))[0]).toMatchObject({
      due: "Tomorrow",
      text: "Call the vendor",
    });
  });

  it("accepts typographic apostrophes", async () => {
    expect((await one(BOB, "I\u2019ll call the vendor."))[0]?.text).toBe("Call the vendor");
  });
});

describe("duePhrase", () => {
  it.each([
    ["send it tomorrow", "tomorrow"],
    ["send it tomorrow morning", "tomorrow morning"],
    ["send it today", "today"],
    ["send it by Friday", "by Friday"],
    ["send it on Monday", "on Monday"],
    ["send it next week", "next week"],
    ["send it by the end of the day", "by the end of the day"],
    ["send it by end of week", "by end of week"],
    ["send it in two weeks", "in two weeks"],
    ["send it within 3 days", "within 3 days"],
    ["send it by the 15th", "by the 15th"],
    ["send it asap", "asap"],
  ])("finds the due phrase in %j", (text, due) => {
    expect(duePhrase(text)).toBe(due);
  });

  it("is null without one", () => {
    expect(duePhrase("send the report")).toBeNull();
    expect(duePhrase("the weekday report")).toBeNull();
  });
});

describe("splitSentences", () => {
  it("splits punctuated text at full stops, question and exclamation marks", () => {
    const sentences = splitSentences(said(ALICE, 100, "Hello there. Is it ready? Yes!"));
    expect(sentences.map((s) => s.text)).toEqual(["Hello there.", "Is it ready?", "Yes!"]);
    expect(sentences.every((s) => s.speaker === "Alice Martin" && s.startMs === 100)).toBe(true);
  });

  it("splits unpunctuated words at pauses, with each sentence's own start", () => {
    const sentences = splitSentences(said(BOB, 1000, "that is all for today thanks everyone", [3]));
    expect(sentences.map((s) => [s.text, s.startMs])).toEqual([
      ["that is all for", 1000],
      ["today thanks everyone", 1000 + 3 * 300 + 1200],
    ]);
  });

  it("cuts a long run of unpunctuated words", () => {
    const text = Array.from({ length: 100 }, (_, i) => `w${i}`).join(" ");
    const sentences = splitSentences(said(null, 0, text));
    expect(sentences.length).toBeGreaterThanOrEqual(3);
    expect(sentences.map((s) => s.text).join(" ")).toBe(text);
  });

  it("works from the text alone when the words are missing", () => {
    const utterance = { ...said(ALICE, 500, "fine i will do it"), words: [] };
    expect(splitSentences(utterance).map((s) => [s.text, s.startMs])).toEqual([["fine i will do it", 500]]);
  });
});

describe("edge cases", () => {
  it("summarizes an empty transcript as nothing said", async () => {
    expect(await summarize([])).toEqual({
      overview: "Nothing was said.",
      keyPoints: [],
      actionItems: [],
      decisions: [],
    });
  });

  it("names the participants in the overview, and counts the rest past four", async () => {
    const names = ["Ann", "Ben", "Cat", "Dan", "Eve", "Fay"];
    const utterances = names.map((name, i) =>
      said({ participantId: name, name }, i * 1000, "the budget review is late"),
    );
    expect((await summarize(utterances)).overview).toMatch(/^Ann, Ben, Cat and 3 others discussed /);
    expect((await summarize(utterances.slice(0, 3))).overview).toMatch(/^Ann, Ben and Cat discussed /);
    expect((await summarize([said(null, 0, "the budget review is late")])).overview).toMatch(
      /^The participants discussed /,
    );
  });

  it("keeps one of two near-identical key points", async () => {
    const text = "The budget review for the marketing campaign is late again.";
    const { keyPoints } = await summarize([
      said(ALICE, 0, text),
      said(BOB, 5000, text),
      said(ALICE, 9000, "Ok."),
    ]);
    expect(keyPoints).toEqual([text]);
  });

  it("rejects with the signal's reason when aborted", async () => {
    const controller = new AbortController();
    controller.abort(new Error("lease lost"));
    await expect(
      extractiveSummarizer().summarize({ utterances: PUNCTUATED, signal: controller.signal }),
    ).rejects.toThrow("lease lost");
  });
});
