import { useState } from "preact/hooks";
import { api, relativeUrl } from "../api.js";
import { ErrorNote, useAction, useApi } from "../components/ui.js";
import { newOAuthState, OAUTH_STATE_KEY, saveTokens } from "../session.js";

interface AuthResult {
  access_token: string;
  refresh_token: string;
}

/** Sign in or register with e-mail and password, or with a configured OAuth provider. */
export function SignInPage({ mode }: { mode: "sign-in" | "register" }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [name, setName] = useState("");
  const action = useAction();
  const providers = useApi<{ providers: { name: string; label: string }[] }>("/v1/auth/oauth");
  const registering = mode === "register";

  const submit = async (event: Event) => {
    event.preventDefault();
    const result = await action.run(() =>
      registering
        ? api<AuthResult>("POST", "/v1/auth/register", { body: { email, password, name }, anonymous: true })
        : api<AuthResult>("POST", "/v1/auth/login", { body: { email, password }, anonymous: true }),
    );
    if (result) {
      if (location.hash !== "#/bots") location.hash = "#/bots";
      saveTokens({ access: result.access_token, refresh: result.refresh_token });
    }
  };

  // The provider sends the browser back to /auth/callback, which hands the tokens to us when
  // they come with this tab's state.
  const startOAuth = (provider: string) => {
    const state = newOAuthState();
    sessionStorage.setItem(OAUTH_STATE_KEY, state);
    location.assign(relativeUrl(`/v1/auth/oauth/${encodeURIComponent(provider)}?state=${state}`));
  };

  return (
    <main class="sign-in" id="main">
      <h1>meetbot</h1>
      <form onSubmit={submit} aria-label={registering ? "Register" : "Sign in"}>
        <h2>{registering ? "Create an account" : "Sign in"}</h2>
        {registering ? (
          <label>
            Name
            <input
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
              required
              autoComplete="name"
            />
          </label>
        ) : null}
        <label>
          E-mail
          <input
            type="email"
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
            required
            autoComplete="email"
          />
        </label>
        <label>
          Password
          <input
            type="password"
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
            required
            minLength={registering ? 8 : undefined}
            autoComplete={registering ? "new-password" : "current-password"}
          />
        </label>
        <ErrorNote error={action.error} />
        <button type="submit" disabled={action.busy}>
          {registering ? "Register" : "Sign in"}
        </button>
        {(providers.data?.providers ?? []).map((provider) => (
          <button
            type="button"
            class="secondary"
            key={provider.name}
            onClick={() => startOAuth(provider.name)}
          >
            Sign in with {provider.label}
          </button>
        ))}
        <p>
          {registering ? (
            <a href="#/sign-in">I have an account: sign in</a>
          ) : (
            <a href="#/register">No account yet? Register</a>
          )}
        </p>
      </form>
    </main>
  );
}
