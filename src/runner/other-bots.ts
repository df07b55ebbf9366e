/**
 * Other bots in the call, by name (automaticLeave.botNames): a name holds a bot word when the word
 * stands on its own, between the name's ends, spaces or punctuation: "Otter.ai" and "Fireflies.ai
 * Notetaker" are bots, "Scotter Jones" and "Abbott" are not.
 */
export function botNameMatcher(words: readonly string[]): (name: string) => boolean {
  if (words.length === 0) return () => false;
  const alternatives = words.map((word) => word.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp(`(?:^|[^\\p{L}\\p{N}])(?:${alternatives.join("|")})(?=$|[^\\p{L}\\p{N}])`, "u");
  return (name) => pattern.test(name.toLowerCase());
}
