import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { currentUser } from "../auth/guard.js";
import {
  AuthResult,
  LoginBody,
  LogoutResult,
  RefreshBody,
  RefreshResult,
  RegisterBody,
  RevokeSessionsResult,
} from "../schemas/index.js";
import type { Services } from "../services/index.js";

/** Public: register, login, refresh. */
export const authRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/auth/register",
    {
      schema: {
        operationId: "register",
        summary: "Create an account and sign in",
        security: [],
        body: RegisterBody,
        response: { 201: AuthResult },
      },
    },
    async (request, reply) => {
      reply.code(201);
      return services.users.register(request.body);
    },
  );

  app.post(
    "/auth/login",
    {
      schema: {
        operationId: "login",
        summary: "Sign in with email and password",
        security: [],
        body: LoginBody,
        response: { 200: AuthResult },
      },
    },
    async (request) => services.users.login(request.body),
  );

  app.post(
    "/auth/refresh",
    {
      schema: {
        operationId: "refreshAccessToken",
        summary: "Trade a refresh token for a new access token and refresh token",
        description:
          "Refresh tokens rotate: the answer carries a new refresh token, and the one sent is used " +
          "up. Sending a used one again answers 401 and ends the sign-in it belongs to (its newest " +
          "refresh token and its access tokens are refused too): one of two holders of the token " +
          "is not its owner.",
        security: [],
        body: RefreshBody,
        response: { 200: RefreshResult },
      },
    },
    async (request) => services.users.refresh(request.body.refresh_token),
  );
};

/**
 * Authenticated. Spec §5: logout invalidates nothing on the server; the client discards its tokens
 * (access tokens expire within 30 minutes). Ending sessions on the server is ours:
 * POST /auth/sessions/revoke. API keys stay valid either way: DELETE /v1/api-keys/{id} revokes.
 */
export const sessionRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/auth/logout",
    {
      schema: {
        operationId: "logout",
        summary: "Sign out (the client discards its tokens)",
        description:
          "Invalidates nothing on the server (spec §5). To end every session, " +
          "POST /v1/auth/sessions/revoke.",
        response: { 200: LogoutResult },
      },
    },
    async () => ({
      message: "Logged out; discard the access and refresh tokens",
    }),
  );

  app.post(
    "/auth/sessions/revoke",
    {
      schema: {
        operationId: "revokeSessions",
        summary: "Sign out everywhere: end every session of yours",
        description:
          "Every access and refresh token of yours issued before this call, the caller's own " +
          "included, is refused from then on; sign in again for new ones. API keys stay valid " +
          "(DELETE /v1/api-keys/{id} revokes one).",
        response: { 200: RevokeSessionsResult },
      },
    },
    async (request) => {
      await services.users.revokeSessions(currentUser(request).id);
      return { message: "Every session has been ended; sign in again. API keys are unchanged" };
    },
  );
};
