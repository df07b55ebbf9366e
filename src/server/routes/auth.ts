import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import {
  AuthResult,
  LoginBody,
  LogoutResult,
  RefreshBody,
  RefreshResult,
  RegisterBody,
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
        summary: "Trade a refresh token for a new access token",
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
 * (access tokens expire within 30 minutes). API keys stay valid: DELETE /v1/api-keys/{id} revokes.
 */
export const logoutRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    "/auth/logout",
    {
      schema: {
        operationId: "logout",
        summary: "Sign out (the client discards its tokens)",
        response: { 200: LogoutResult },
      },
    },
    async () => ({
      message: "Logged out; discard the access and refresh tokens",
    }),
  );
};
