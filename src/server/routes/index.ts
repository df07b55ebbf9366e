import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { requireUser } from "../auth/guard.js";
import type { Services } from "../services/index.js";
import { authRoutes } from "./auth.js";
import { botRoutes } from "./bots.js";
import { callbackRoutes } from "./callbacks.js";
import { eventRoutes } from "./events.js";
import { recordingFileRoutes, recordingRoutes } from "./recordings.js";

/**
 * Every /v1 route, registered as one plugin so that it can be mounted under more than one prefix
 * (`/v1`, later the sandbox's `/api/v1`). Authentication is decided here, per group, so that no
 * route can forget it.
 */
export const apiRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  // Public, or with their own credential.
  await app.register(authRoutes, { services });
  await app.register(callbackRoutes, { services });
  await app.register(recordingFileRoutes, { services });

  // Everything else: a user's bearer credential.
  await app.register(async (authenticated) => {
    authenticated.addHook(
      "onRequest",
      requireUser((token) => services.users.resolveBearer(token)),
    );
    await authenticated.register(botRoutes, { services });
    await authenticated.register(eventRoutes, { services });
    await authenticated.register(recordingRoutes, { services });
  });
};
