import { recordRotation } from "./rotation.js";

/**
 * The signed-in user's tokens. They live in localStorage so that a reload or a second tab stays
 * signed in; the page's Content-Security-Policy admits no script but ours, which is what keeps
 * them there safely. Anything that signs in or out goes through here, so the app can re-render.
 */
export interface Tokens {
  access: string;
  refresh: string;
}

const KEY = "meetbot.session";
/**
 * A random value the sign-in page keeps in this tab before it leaves for an OAuth provider, and
 * sends along as `state`; /auth/callback keeps the tokens only when it comes back with the same
 * value (src/server/routes/oauth.ts), so a link carrying someone else's tokens signs no one in.
 */
export const OAUTH_STATE_KEY = "meetbot.oauth-state";

/** A fresh value for OAUTH_STATE_KEY: 32 random bytes, hex. */
export function newOAuthState(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0")).join(
    "",
  );
}

type Listener = (tokens: Tokens | null) => void;
const listeners = new Set<Listener>();

export function currentTokens(): Tokens | null {
  try {
    const parsed = JSON.parse(localStorage.getItem(KEY) ?? "null") as Partial<Tokens> | null;
    return parsed && typeof parsed.access === "string" && typeof parsed.refresh === "string"
      ? { access: parsed.access, refresh: parsed.refresh }
      : null;
  } catch {
    return null;
  }
}

export function saveTokens(tokens: Tokens | null): void {
  if (tokens) localStorage.setItem(KEY, JSON.stringify(tokens));
  else {
    localStorage.removeItem(KEY);
    void recordRotation(null);
  }
  for (const listener of listeners) listener(tokens);
}

export function onSessionChange(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

// Another tab signed in or out.
window.addEventListener("storage", (event) => {
  if (event.key === KEY) for (const listener of listeners) listener(currentTokens());
});
