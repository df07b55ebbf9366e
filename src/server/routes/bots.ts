import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { Bot, BotDetail, BotList, BotListQuery, CreateBotBody, DeployResult } from "../schemas.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const BotParams = z.object({ id: IdParam });

/** Authenticated (the guard is added by the enclosing plugin). */
export const botRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post("/bots", { schema: { body: CreateBotBody, response: { 201: Bot } } }, async (request, reply) => {
    reply.code(201);
    return services.bots.create(currentUser(request).id, request.body);
  });

  app.get("/bots", { schema: { querystring: BotListQuery, response: { 200: BotList } } }, async (request) =>
    services.bots.list(currentUser(request).id, request.query),
  );

  app.get("/bots/:id", { schema: { params: BotParams, response: { 200: BotDetail } } }, async (request) =>
    services.bots.get(currentUser(request).id, request.params.id),
  );

  app.post(
    "/bots/:id/deploy",
    { schema: { params: BotParams, response: { 200: DeployResult } } },
    async (request) => services.bots.deploy(currentUser(request).id, request.params.id),
  );
};
