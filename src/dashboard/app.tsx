import { useEffect, useState } from "preact/hooks";
import { Layout } from "./components/layout.js";
import { BotPage } from "./pages/bot.js";
import { BotAccountsPage } from "./pages/bot-accounts.js";
import { BotsPage } from "./pages/bots.js";
import { CalendarsPage } from "./pages/calendars.js";
import { KeysPage } from "./pages/keys.js";
import { SignInPage } from "./pages/sign-in.js";
import { UsagePage } from "./pages/usage.js";
import { WebhooksPage } from "./pages/webhooks.js";
import { type Route, useRoute } from "./router.js";
import { currentTokens, onSessionChange } from "./session.js";

export function App() {
  const route = useRoute();
  const [signedIn, setSignedIn] = useState(() => currentTokens() !== null);
  useEffect(() => onSessionChange((tokens) => setSignedIn(tokens !== null)), []);

  if (!signedIn) return <SignInPage mode={route.page === "register" ? "register" : "sign-in"} />;
  return (
    <Layout route={route}>
      <Page route={route} />
    </Layout>
  );
}

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case "bot":
      return <BotPage key={route.botId} botId={route.botId} />;
    case "bot-accounts":
      return <BotAccountsPage />;
    case "calendars":
      return <CalendarsPage />;
    case "keys":
      return <KeysPage />;
    case "webhooks":
      return <WebhooksPage />;
    case "usage":
      return <UsagePage />;
    default:
      return <BotsPage />;
  }
}
