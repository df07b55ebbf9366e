import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { currentUser } from "../auth/guard.js";
import {
  Analytics,
  AnalyticsQuery,
  ApiLogList,
  ApiLogsQuery,
  UpdateProfileBody,
  UpdateProfileResult,
  Usage,
  UsageQuery,
  UserProfile,
} from "../schemas/index.js";
import type { Services } from "../services/index.js";

/** Authenticated: the caller's own profile, usage, analytics and API request log. */
export const userRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/users/me",
    { schema: { operationId: "getProfile", summary: "Your profile", response: { 200: UserProfile } } },
    async (request) => services.profile.get(currentUser(request).id),
  );

  app.patch(
    "/users/me",
    {
      schema: {
        operationId: "updateProfile",
        summary: "Change your name or password",
        description:
          "A password change ends every session: each access and refresh token issued before it " +
          "(the caller's too) is refused from then on. The answer then also carries a new sign-in's " +
          "access_token and refresh_token. API keys stay valid.",
        body: UpdateProfileBody,
        response: { 200: UpdateProfileResult },
      },
    },
    async (request) => services.profile.update(currentUser(request).id, request.body),
  );

  app.get(
    "/users/me/usage",
    {
      schema: {
        operationId: "getUsage",
        summary: "Your bots' usage over a period",
        querystring: UsageQuery,
        response: { 200: Usage },
      },
    },
    async (request) => services.profile.usage(currentUser(request).id, request.query),
  );

  app.get(
    "/users/me/analytics",
    {
      schema: {
        operationId: "getAnalytics",
        summary: "Your bots' outcomes and meeting time",
        querystring: AnalyticsQuery,
        response: { 200: Analytics },
      },
    },
    async (request) => services.profile.analytics(currentUser(request).id, request.query),
  );

  app.get(
    "/users/me/api-logs",
    {
      schema: {
        operationId: "listApiLogs",
        summary: "Your API request log",
        querystring: ApiLogsQuery,
        response: { 200: ApiLogList },
      },
    },
    async (request) => services.apiLogs.list(currentUser(request).id, request.query),
  );
};
