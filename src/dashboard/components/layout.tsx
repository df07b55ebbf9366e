import type { ComponentChildren } from "preact";
import { useEffect } from "preact/hooks";
import { api } from "../api.js";
import { useLiveConnection } from "../live.js";
import { hrefOf, type Route } from "../router.js";
import { saveTokens } from "../session.js";
import { useApi } from "./ui.js";

const SECTIONS = [
  { route: { page: "bots" }, label: "Bots" },
  { route: { page: "calendars" }, label: "Calendars" },
  { route: { page: "bot-accounts" }, label: "Bot accounts" },
  { route: { page: "keys" }, label: "API keys" },
  { route: { page: "webhooks" }, label: "Webhooks" },
  { route: { page: "usage" }, label: "Usage" },
] as const;

const LIVE_LABELS = { connecting: "Connecting…", live: "Live", reconnecting: "Reconnecting…" };

/** The signed-in frame: navigation, who is signed in, the live connection's state. */
export function Layout({ route, children }: { route: Route; children: ComponentChildren }) {
  const live = useLiveConnection();
  const me = useApi<{ email: string; name: string }>("/v1/users/me");
  const current = route.page === "bot" ? "bots" : route.page;
  const title = SECTIONS.find((section) => section.route.page === current)?.label ?? "meetbot";
  useEffect(() => {
    document.title = `${title} · meetbot`;
  }, [title]);

  const signOut = async () => {
    await api("POST", "/v1/auth/logout").catch(() => undefined);
    saveTokens(null);
  };

  return (
    <div class="shell">
      {/* Its fragment would be read as a page (routes live in the fragment): it moves the focus instead. */}
      <a class="skip" href="#main" onClick={skipToContent}>
        Skip to content
      </a>
      <header class="topbar">
        <a class="brand" href="#/bots">
          meetbot
        </a>
        <nav aria-label="Sections">
          {SECTIONS.map((section) => (
            <a
              key={section.label}
              href={hrefOf(section.route)}
              aria-current={current === section.route.page ? "page" : undefined}
            >
              {section.label}
            </a>
          ))}
        </nav>
        <span class={`live live-${live}`} role="status" aria-live="polite">
          {LIVE_LABELS[live]}
        </span>
        <span class="who">{me.data ? me.data.email : ""}</span>
        <button type="button" class="link" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}

function skipToContent(event: Event) {
  event.preventDefault();
  document.getElementById("main")?.focus();
}
