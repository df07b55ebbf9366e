import type { ActionItem, SummarizeRequest, Summarizer, Summary, Utterance } from "./types.js";

/**
 * The embedded, offline summarizer: no model, only the transcript's own sentences.
 * - Key points: sentences scored by how much of the meeting's vocabulary they carry (each content
 *   word weighted by its frequency in the meeting and its rarity across sentences, TF-IDF-like),
 *   the best few in the order they were said.
 * - Action items: commitments ("I will", "<Name> will", "can you", "let's", "we need to"), the
 *   owner being the person named, else the speaker ("can you" without a name: unknown).
 * - Decisions: "we decided", "we agreed", "the decision is", "let's go with".
 * Recognizers like pocketsphinx write lower case without punctuation, so sentences come from the
 * utterances and the pauses inside them as much as from punctuation.
 */
export function extractiveSummarizer(options: { maxKeyPoints?: number } = {}): Summarizer {
  return {
    engine: "extractive",
    async summarize(request: SummarizeRequest): Promise<Summary> {
      request.signal?.throwIfAborted();
      return summarize(request.utterances, request.meetingTitle, options.maxKeyPoints ?? 5);
    },
  };
}

export interface Sentence {
  text: string;
  speaker: string | null;
  startMs: number;
}

/** A pause this long between two words ends a sentence when the text has no punctuation. */
const SENTENCE_PAUSE_MS = 600;
/** Unpunctuated speech without pauses is cut into pieces of at most this many words. */
const MAX_SENTENCE_WORDS = 40;
const MIN_KEY_POINT_WORDS = 5;

function summarize(
  utterances: readonly Utterance[],
  meetingTitle: string | undefined,
  maxKeyPoints: number,
): Summary {
  const sentences = utterances.flatMap(splitSentences);
  const people = participants(utterances);
  const { keyPoints, best } = pickKeyPoints(sentences, maxKeyPoints);
  const actionItems = sentences.flatMap((sentence) => actionItemOf(sentence, people) ?? []);
  const decisions = sentences.flatMap((sentence) => decisionOf(sentence) ?? []);
  return {
    overview: overview(people, sentences, best, meetingTitle),
    keyPoints,
    actionItems,
    decisions,
  };
}

/** An utterance's sentences: by punctuation when there is some, else by pauses between words. */
export function splitSentences(utterance: Utterance): Sentence[] {
  const speaker = utterance.speaker?.name ?? null;
  const make = (text: string, startMs = utterance.startMs): Sentence => ({ text, speaker, startMs });
  if (/[.!?]/.test(utterance.text)) {
    return utterance.text
      .split(/(?<=[.!?])\s+/)
      .map((text) => text.trim())
      .filter(Boolean)
      .map((text) => make(text));
  }
  const pieces: Array<{ text: string; startMs: number }[]> = [];
  let piece: Array<{ text: string; startMs: number }> = [];
  let previousEnd: number | null = null;
  const words = utterance.words.length
    ? utterance.words
    : utterance.text
        .split(/\s+/)
        .map((text) => ({ text, startMs: utterance.startMs, endMs: utterance.startMs }));
  for (const [position, word] of words.entries()) {
    const paused = previousEnd !== null && word.startMs - previousEnd >= SENTENCE_PAUSE_MS;
    const opens = piece.length >= MIN_WORDS_BEFORE_OPENER && opensSentence(words, position);
    if (piece.length && (paused || opens || piece.length >= MAX_SENTENCE_WORDS)) {
      pieces.push(piece);
      piece = [];
    }
    if (word.text) piece.push(word);
    previousEnd = word.endMs;
  }
  if (piece.length) pieces.push(piece);
  // Each sentence starts where its first word does: a long utterance holds several commitments.
  return pieces.map((words) => make(words.map((word) => word.text).join(" "), words[0]!.startMs));
}

/**
 * Phrases that begin a new sentence in unpunctuated speech: a recognizer hears no full stops and
 * speakers pause little between sentences (pocketsphinx found no gap over 100 ms in a minute of
 * read text), so without this a commitment would run on into whatever came next.
 */
const SENTENCE_OPENERS = [
  "i will",
  "i'll",
  "i am going to",
  "i'm going to",
  "can you",
  "could you",
  "would you",
  "let's",
  "let us",
  "we need to",
  "we have to",
  "we should",
  "we decided",
  "we agreed",
  "we've decided",
  "we've agreed",
  "the decision is",
].map((phrase) => phrase.split(" "));
const MIN_WORDS_BEFORE_OPENER = 3;

function opensSentence(words: ReadonlyArray<{ text: string }>, position: number): boolean {
  return SENTENCE_OPENERS.some((phrase) =>
    phrase.every((part, offset) => normalize(words[position + offset]?.text ?? "") === part),
  );
}

// ---- key points -------------------------------------------------------------------------------

const STOP_WORDS = new Set(
  (
    "a about above after again against all also am an and any are as at be because been before being below " +
    "between both but by can could did do does doing done down during each few for from further get got had " +
    "has have having he her here hers herself him himself his how i if in into is it its itself just know let " +
    "lets like me more most my myself no nor not now of off ok okay on once only or other our ours ourselves " +
    "out over own really right same say said see she should so some such than that the their theirs them " +
    "themselves then there these they this those through thing things think to too under until up us very " +
    "want was we well were what when where which while who whom why will with would yeah yes you your yours " +
    "yourself yourselves um uh hmm oh going go gonna one two also need thanks thank good morning everyone " +
    "i'll i'm i've we'll we're we've you'll you're it's that's let's don't can't won't meeting joining " +
    "today tomorrow yesterday week weeks day days month last next first time"
  ).split(" "),
);

function contentWords(text: string): string[] {
  return (normalize(text).match(/[a-z0-9']+/g) ?? []).filter(
    (word) => word.length > 1 && !STOP_WORDS.has(word),
  );
}

/** The best few sentences in the order said, and the very best one (for the overview). */
function pickKeyPoints(
  sentences: readonly Sentence[],
  max: number,
): { keyPoints: string[]; best: string | null } {
  const weights = wordWeights(sentences);
  const scored = sentences
    .map((sentence, position) => {
      const words = new Set(contentWords(sentence.text));
      const total = [...words].reduce((sum, word) => sum + (weights.get(word) ?? 0), 0);
      // Dividing by the square root favours sentences dense in topic words without preferring short ones.
      return { sentence, position, words, score: words.size ? total / Math.sqrt(words.size) : 0 };
    })
    .filter((entry) => entry.sentence.text.split(/\s+/).length >= MIN_KEY_POINT_WORDS && entry.score > 0)
    .sort((a, b) => b.score - a.score || a.position - b.position);
  const chosen: typeof scored = [];
  for (const entry of scored) {
    if (chosen.length >= max) break;
    // A sentence said twice (or nearly) is one key point.
    if (chosen.some((other) => similarity(other.words, entry.words) >= 0.8)) continue;
    chosen.push(entry);
  }
  const best = chosen[0] ? tidy(chosen[0].sentence.text) : null;
  return {
    keyPoints: chosen.sort((a, b) => a.position - b.position).map((entry) => tidy(entry.sentence.text)),
    best,
  };
}

/** Frequency in the meeting times log-rarity across sentences: frequent topic words, not filler. */
function wordWeights(sentences: readonly Sentence[]): Map<string, number> {
  const frequency = new Map<string, number>();
  const sentencesWith = new Map<string, number>();
  for (const sentence of sentences) {
    const words = contentWords(sentence.text);
    for (const word of words) frequency.set(word, (frequency.get(word) ?? 0) + 1);
    for (const word of new Set(words)) sentencesWith.set(word, (sentencesWith.get(word) ?? 0) + 1);
  }
  const weights = new Map<string, number>();
  for (const [word, count] of frequency) {
    weights.set(word, count * Math.log(1 + sentences.length / sentencesWith.get(word)!));
  }
  return weights;
}

function similarity(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  const shared = [...a].filter((word) => b.has(word)).length;
  const union = new Set([...a, ...b]).size;
  return union ? shared / union : 1;
}

// ---- action items and decisions ---------------------------------------------------------------

const DECISION =
  /\b(we('ve| have)? decided|we('ve| have)? agreed|(the )?decision is|(it's|it is) decided|let's go with|let us go with|we('ll| will) go with|we('re| are) going with)\b/;

/** A decision as said, from its cue on ("sure, we decided to …" → "We decided to …"). */
function decisionOf(sentence: Sentence): string | null {
  const match = DECISION.exec(normalize(sentence.text));
  return match ? tidy(sentence.text.slice(match.index)) : null;
}

/** Requests and plans that are not tasks: "can you hear me", "let's get started". */
const NOT_A_TASK =
  /^(hear|see|repeat|say that|know|be|give me a (second|minute)|start|begin|get started|move on|wrap up|go with|talk|take a look at (my|the) screen)\b/;

interface Cue {
  /** Matches in the normalized sentence; the task is what follows it. */
  pattern: RegExp;
  owner: "speaker" | "named" | "addressee";
}

const CUES: Cue[] = [
  { pattern: /\b(?:i will|i'll|i am going to|i'm going to|i can take care of|let me)\s+/g, owner: "speaker" },
  {
    pattern: /\b([a-z][a-z-]*)(?:\s+will|'ll|\s+is going to|\s+needs to|\s+has to|\s+should)\s+/g,
    owner: "named",
  },
  { pattern: /\b(?:can|could|would) you(?: please)?\s+/g, owner: "addressee" },
  { pattern: /\b(?:let's|let us)\s+/g, owner: "speaker" },
  { pattern: /\b(?:we need to|we have to|we should|we must)\s+/g, owner: "speaker" },
];

interface Person {
  name: string;
  /** Lower-case full name, first name and last name: people say "Bob", "Bob Chen" or "Chen". */
  keys: string[];
}

/** The speakers, in order of first speech. */
function participants(utterances: readonly Utterance[]): Person[] {
  const seen = new Map<string, Person>();
  for (const { speaker } of utterances) {
    if (!speaker || seen.has(speaker.participantId)) continue;
    const full = speaker.name.trim().toLowerCase();
    const parts = full.split(/\s+/);
    seen.set(speaker.participantId, {
      name: speaker.name.trim(),
      keys: [...new Set([full, parts[0]!, parts.at(-1)!])],
    });
  }
  return [...seen.values()];
}

function personNamed(word: string, people: readonly Person[]): Person | undefined {
  return people.find((person) => person.keys.includes(word));
}

/** The person addressed in a sentence: someone named in it who is not the speaker. */
function addressee(text: string, speaker: string | null, people: readonly Person[]): Person | undefined {
  const words = new Set(text.match(/[a-z'-]+/g) ?? []);
  return people.find((person) => person.name !== speaker && person.keys.some((key) => words.has(key)));
}

function actionItemOf(sentence: Sentence, people: readonly Person[]): ActionItem | null {
  const text = normalize(sentence.text);
  for (const cue of CUES) {
    for (const match of text.matchAll(cue.pattern)) {
      let owner: string | null;
      if (cue.owner === "named") {
        const named = personNamed(match[1]!, people);
        if (!named) continue; // "it will", "this should": not a person
        owner = named.name;
      } else if (cue.owner === "addressee") {
        owner = addressee(text, sentence.speaker, people)?.name ?? null;
      } else {
        owner = sentence.speaker;
      }
      // The task as said, from the original text (normalize keeps every character's position).
      const task = taskOf(sentence.text.slice(match.index + match[0].length));
      if (!task || NOT_A_TASK.test(normalize(task))) continue;
      // The due phrase of this task, else one said before it ("tomorrow I will …").
      const due = duePhrase(task) ?? duePhrase(sentence.text.slice(0, match.index));
      return { text: tidy(task, false), owner, due, startMs: sentence.startMs };
    }
  }
  return null;
}

/** Unpunctuated speech runs on past the task; a due phrase or this many words ends it. */
const MAX_TASK_WORDS = 15;

function taskOf(rest: string): string {
  const due = DUE.exec(normalize(rest));
  const upToDue = due ? rest.slice(0, due.index + due[0].length) : rest;
  return upToDue
    .split(/\s+/)
    .filter(Boolean)
    .slice(0, MAX_TASK_WORDS)
    .join(" ")
    .replace(/[.!?,;:]+$/, "");
}

const DAY = "(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)";
const COUNT = "(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few|\\d+)";
const DUE = new RegExp(
  [
    "by (?:the )?end of (?:the |this |next )?(?:day|week|month|quarter|year|sprint)",
    "(?:by |before )?(?:the )?end of (?:the |this |next )?(?:day|week|month|quarter|year|sprint)",
    `(?:by|on|before|until|next|this|on next) ${DAY}(?: (?:morning|afternoon|evening|night))?`,
    `${DAY}(?: (?:morning|afternoon|evening|night))?`,
    "(?:by |before )?tomorrow(?: (?:morning|afternoon|evening|night))?",
    "(?:by )?(?:today|tonight|noon)",
    "(?:by )?(?:next|this) (?:week|month|quarter|year|sprint|morning|afternoon|evening)",
    `(?:with)?in ${COUNT} (?:days?|weeks?|hours?|months?)`,
    "by (?:the )?\\d{1,2}(?:st|nd|rd|th)?(?: of \\w+)?",
    "asap|as soon as possible|eod|end of day",
  ]
    .map((part) => `\\b(?:${part})\\b`)
    .join("|"),
);

/** The due phrase as said ("tomorrow", "by Friday", "by the end of the day"), or null. */
export function duePhrase(text: string): string | null {
  const match = DUE.exec(normalize(text));
  return match ? text.slice(match.index, match.index + match[0].length) : null;
}

// ---- overview ---------------------------------------------------------------------------------

function overview(
  people: readonly Person[],
  sentences: readonly Sentence[],
  best: string | null,
  meetingTitle: string | undefined,
): string {
  if (!sentences.length) return "Nothing was said.";
  const names = people.map((person) => person.name);
  const who =
    names.length === 0
      ? "The participants"
      : names.length <= 4
        ? listed(names)
        : `${names.slice(0, 3).join(", ")} and ${names.length - 3} others`;
  const weights = wordWeights(sentences);
  const topics = [...weights.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, 3)
    .map(([word]) => word);
  const where = meetingTitle ? ` in "${meetingTitle}"` : "";
  const first = `${who}${where} discussed ${topics.length ? listed(topics) : "a few things"}.`;
  return best ? `${first} ${best}` : first;
}

function listed(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}

// ---- text ---------------------------------------------------------------------------------------

/** Lower case with typographic apostrophes made plain: the same length, so positions carry over. */
function normalize(text: string): string {
  return text.toLowerCase().replace(/[\u2018\u2019]/g, "'");
}

/** A sentence for people: capitalized, "i" as "I", ending with a full stop. */
function tidy(text: string, fullStop = true): string {
  const trimmed = text.trim().replace(/\s+/g, " ").replace(/\bi\b/g, "I");
  const capital = trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
  return fullStop && !/[.!?]$/.test(capital) ? `${capital}.` : capital;
}
