import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { requireUser } from "../auth/guard.js";
import { documentBearerAuth } from "../http/openapi.js";
import { limitPerClientIp, limitPerCredential, type RateLimiter } from "../http/rate-limit.js";
import { logApiRequest } from "../http/request-log.js";
import type { Services } from "../services/index.js";
import { apiKeyUsageRoutes } from "./api-key-usage.js";
import { apiKeyRoutes } from "./api-keys.js";
import { authRoutes, sessionRoutes } from "./auth.js";
import { accountCheckCallbackRoutes, botAccountRoutes } from "./bot-accounts.js";
import { botRoutes } from "./bots.js";
import { calendarRoutes } from "./calendars.js";
import { callbackRoutes } from "./callbacks.js";
import { commandRoutes } from "./commands.js";
import { liveRoutes } from "./live.js";
import { liveSocketRoutes } from "./live-ws.js";
import { eventRoutes } from "./events.js";
import { oauthRoutes } from "./oauth.js";
import { recordingFileRoutes, recordingRoutes } from "./recordings.js";
import { sharedRecordingRoutes, shareRoutes } from "./shares.js";
import { summaryRoutes } from "./summaries.js";
import { transcriptRoutes } from "./transcripts.js";
import { userRoutes } from "./users.js";
import { voiceRoutes } from "./voice.js";
import { pictureRoutes } from "./picture.js";
import { webhookReceiverRoutes } from "./webhook-receivers.js";
import { webhookRoutes } from "./webhooks.js";

/**
 * Every /v1 route, registered as one plugin so that it is mounted under both prefixes (`/v1` and
 * the sandbox's `/api/v1`). Authentication, rate limiting and the API request log are decided
 * here, per group, so that no route can forget them.
 */
export const apiRoutes: FastifyPluginAsyncZod<{ services: Services; rateLimiter: RateLimiter }> = async (
  app,
  { services, rateLimiter },
) => {
  // Public, rate limited per client address.
  await app.register(async (publicApi) => {
    publicApi.addHook("onRequest", limitPerClientIp(rateLimiter));
    await publicApi.register(authRoutes, { services });
    await publicApi.register(oauthRoutes, { services });
  });
  // Public share links: the token is the credential; a budget of their own per client address,
  // so that watching a shared recording never spends the address's sign-in budget.
  await app.register(async (sharedApi) => {
    sharedApi.addHook("onRequest", limitPerClientIp(rateLimiter, "share"));
    await sharedApi.register(sharedRecordingRoutes, { services });
  });
  // Public, or with their own credential; never rate limited (runners, signed download links).
  await app.register(callbackRoutes, { services });
  await app.register(accountCheckCallbackRoutes, { services });
  await app.register(recordingFileRoutes, { services });
  await app.register(webhookReceiverRoutes, { services });
  // Its credential comes on the upgrade or as the first message (browsers cannot set headers).
  await app.register(liveSocketRoutes, { services });

  // Everything else: a user's bearer credential.
  await app.register(async (authenticated) => {
    authenticated.addHook(
      "onRequest",
      requireUser((token) => services.users.resolveBearer(token)),
    );
    authenticated.addHook("onRequest", limitPerCredential(rateLimiter));
    authenticated.addHook("onResponse", logApiRequest(services.apiLogs));
    authenticated.addHook("onRoute", documentBearerAuth);
    await authenticated.register(sessionRoutes, { services });
    await authenticated.register(apiKeyRoutes, { services });
    await authenticated.register(botRoutes, { services });
    await authenticated.register(commandRoutes, { services });
    await authenticated.register(liveRoutes, { services });
    await authenticated.register(voiceRoutes, { services });
    await authenticated.register(pictureRoutes, { services });
    await authenticated.register(botAccountRoutes, { services });
    await authenticated.register(calendarRoutes, { services });
    await authenticated.register(eventRoutes, { services });
    await authenticated.register(recordingRoutes, { services });
    await authenticated.register(shareRoutes, { services });
    await authenticated.register(transcriptRoutes, { services });
    await authenticated.register(summaryRoutes, { services });
    await authenticated.register(userRoutes, { services });
    await authenticated.register(apiKeyUsageRoutes, { services });
    await authenticated.register(webhookRoutes, { services });
  });
};
