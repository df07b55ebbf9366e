/**
 * Providers name languages their own way: OpenAI's verbose_json says "english", AssemblyAI says
 * "en_us", Deepgram "en". Recognition.language is the ISO 639-1 code ("en") when one is known,
 * else the provider's word as it came.
 */
export function languageCode(value: string): string {
  const lower = value.trim().toLowerCase();
  const primary = /^([a-z]{2,3})(?:[-_][a-z0-9]+)*$/.exec(lower)?.[1];
  if (primary && primary.length === 2) return primary;
  return codesByName().get(lower) ?? value;
}

let byName: Map<string, string> | undefined;

/** English language names to codes, from the runtime's own ICU data (every two-letter code it names). */
function codesByName(): Map<string, string> {
  if (byName) return byName;
  byName = new Map();
  const names = new Intl.DisplayNames("en", { type: "language", fallback: "code" });
  const letters = "abcdefghijklmnopqrstuvwxyz";
  for (const a of letters) {
    for (const b of letters) {
      const code = a + b;
      const name = names.of(code);
      if (name && name !== code) byName.set(name.toLowerCase(), code);
    }
  }
  return byName;
}

/**
 * A request's language as AssemblyAI's `language_code` wants it: lower case with an underscore
 * ("en-US" → "en_us"), and its one region name of its own, "en_uk" for British English.
 */
export function assemblyAiLanguage(value: string): string {
  const code = value.trim().toLowerCase().replace(/-/g, "_");
  return code === "en_gb" ? "en_uk" : code;
}
