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
/** Set by the sign-in page before it leaves for an OAuth provider; /auth/callback reads it. */
export const OAUTH_PENDING_KEY = "meetbot.oauth-pending";

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
