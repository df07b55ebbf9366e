import { useEffect, useState } from "preact/hooks";

/**
 * Pages live in the address's fragment (`#/bots/12`): the server serves one page at `/`, a reload
 * or a bookmark lands where it was, and the back button works.
 */
export type Route =
  | { page: "bots" }
  | { page: "bot"; botId: number }
  | { page: "bot-accounts" }
  | { page: "calendars" }
  | { page: "keys" }
  | { page: "webhooks" }
  | { page: "usage" }
  | { page: "sign-in" }
  | { page: "register" };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  const [first, second] = parts;
  if (first === "bots" && second && /^\d+$/.test(second)) return { page: "bot", botId: Number(second) };
  if (
    first === "bot-accounts" ||
    first === "calendars" ||
    first === "keys" ||
    first === "webhooks" ||
    first === "usage" ||
    first === "register"
  )
    return { page: first };
  if (first === "sign-in") return { page: "sign-in" };
  return { page: "bots" };
}

export function hrefOf(route: Route): string {
  return route.page === "bot" ? `#/bots/${route.botId}` : `#/${route.page}`;
}

export function navigate(route: Route): void {
  location.hash = hrefOf(route);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    window.addEventListener("hashchange", update);
    return () => window.removeEventListener("hashchange", update);
  }, []);
  return route;
}
