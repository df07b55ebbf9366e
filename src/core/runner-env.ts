/**
 * The only environment variables a runner inherits from the server, and the only ones of the
 * runner's that its helper processes (Chromium, ffmpeg, Xvfb, PulseAudio) inherit: where programs
 * are, a home, the locale, the temporary directory, and the extra CAs Node trusts (a private CA
 * behind the public URL the runner calls back to is the server's as well). Chromium renders
 * third-party pages, so nothing else reaches it: no server secret, no database URL, no callback
 * token. What a runner needs from the operator comes in its BotConfig (RunnerSettings).
 */
export const RUNNER_ENV_ALLOWLIST = [
  "PATH",
  "HOME",
  "TMPDIR",
  "TZ",
  "LANG",
  "LANGUAGE",
  "LC_ALL",
  "LC_CTYPE",
  "LC_NUMERIC",
  "LC_TIME",
  "LC_COLLATE",
  "LC_MONETARY",
  "LC_MESSAGES",
  "NODE_EXTRA_CA_CERTS",
] as const;

/** The allowlisted variables of `source` that are set, plus `extra` (which wins). */
export function allowlistedEnv(
  source: Readonly<Record<string, string | undefined>>,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of RUNNER_ENV_ALLOWLIST) {
    const value = source[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
}
