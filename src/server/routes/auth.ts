import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { AuthResult, LoginBody, RefreshBody, RefreshResult, RegisterBody } from "../schemas/index.js";
import type { Services } from "../services/index.js";

/** Public: register, login, refresh. */
export const authRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/auth/register",
    { schema: { body: RegisterBody, response: { 201: AuthResult } } },
    async (request, reply) => {
      reply.code(201);
      return services.users.register(request.body);
    },
  );

  app.post("/auth/login", { schema: { body: LoginBody, response: { 200: AuthResult } } }, async (request) =>
    services.users.login(request.body),
  );

  app.post(
    "/auth/refresh",
    { schema: { body: RefreshBody, response: { 200: RefreshResult } } },
    async (request) => services.users.refresh(request.body.refresh_token),
  );
};
