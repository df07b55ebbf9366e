import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import {
  CallbackDeliveryListQuery,
  CreateWebhookBody,
  DeliveryListQuery,
  SigningSecret,
  UpdateWebhookBody,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryDetail,
  WebhookDeliveryList,
  WebhookDetail,
  WebhookList,
  WebhookTestResult,
  WebhookWithSecret,
} from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const WebhookParams = z.object({ id: IdParam });
const DeliveryParams = z.object({ id: IdParam, deliveryId: IdParam });
const CallbackDeliveryParams = z.object({ deliveryId: IdParam });

/**
 * Authenticated (the guard is added by the enclosing plugin). Another user's webhook or delivery
 * is a 404, like one that does not exist.
 */
export const webhookRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const webhooks = services.webhooks;

  app.post(
    "/webhooks",
    {
      schema: {
        operationId: "createWebhook",
        summary: "Subscribe a URL to bot events",
        body: CreateWebhookBody,
        response: { 201: WebhookWithSecret },
      },
    },
    async (request, reply) => {
      reply.code(201);
      return webhooks.create(currentUser(request).id, request.body);
    },
  );

  app.get(
    "/webhooks",
    {
      schema: { operationId: "listWebhooks", summary: "List your webhooks", response: { 200: WebhookList } },
    },
    async (request) => webhooks.list(currentUser(request).id),
  );

  // The callbackUrl channel: static paths, matched before /webhooks/:id.
  app.get(
    "/webhooks/signing-secret",
    {
      schema: {
        operationId: "getSigningSecret",
        summary: "The secret that signs callbackUrl deliveries",
        response: { 200: SigningSecret },
      },
    },
    async (request) => webhooks.signingSecret(currentUser(request).id),
  );

  app.post(
    "/webhooks/signing-secret/rotate",
    {
      schema: {
        operationId: "rotateSigningSecret",
        summary: "Replace the callbackUrl signing secret",
        response: { 200: SigningSecret },
      },
    },
    async (request) => webhooks.rotateSigningSecret(currentUser(request).id),
  );

  app.get(
    "/webhooks/callback-deliveries",
    {
      schema: {
        operationId: "listCallbackDeliveries",
        summary: "List deliveries to bots' callbackUrls",
        querystring: CallbackDeliveryListQuery,
        response: { 200: WebhookDeliveryList },
      },
    },
    async (request) => webhooks.callbackDeliveries(currentUser(request).id, request.query),
  );

  app.get(
    "/webhooks/callback-deliveries/:deliveryId",
    {
      schema: {
        operationId: "getCallbackDelivery",
        summary: "A callbackUrl delivery with its attempts",
        params: CallbackDeliveryParams,
        response: { 200: WebhookDeliveryDetail },
      },
    },
    async (request) => webhooks.callbackDelivery(currentUser(request).id, request.params.deliveryId),
  );

  app.post(
    "/webhooks/callback-deliveries/:deliveryId/redeliver",
    {
      schema: {
        operationId: "redeliverCallbackDelivery",
        summary: "Send a callbackUrl delivery again",
        params: CallbackDeliveryParams,
        response: { 202: WebhookDelivery },
      },
    },
    async (request, reply) => {
      reply.code(202);
      return webhooks.redeliverCallback(currentUser(request).id, request.params.deliveryId);
    },
  );

  app.get(
    "/webhooks/:id",
    {
      schema: {
        operationId: "getWebhook",
        summary: "A webhook with its delivery statistics",
        params: WebhookParams,
        response: { 200: WebhookDetail },
      },
    },
    async (request) => webhooks.get(currentUser(request).id, request.params.id),
  );

  app.patch(
    "/webhooks/:id",
    {
      schema: {
        operationId: "updateWebhook",
        summary: "Change a webhook",
        params: WebhookParams,
        body: UpdateWebhookBody,
        response: { 200: Webhook },
      },
    },
    async (request) => webhooks.update(currentUser(request).id, request.params.id, request.body),
  );

  app.delete(
    "/webhooks/:id",
    {
      schema: {
        operationId: "deleteWebhook",
        summary: "Delete a webhook",
        params: WebhookParams,
        response: { 204: z.null().describe("Deleted") },
      },
    },
    async (request, reply) => {
      await webhooks.remove(currentUser(request).id, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/webhooks/:id/rotate-secret",
    {
      schema: {
        operationId: "rotateWebhookSecret",
        summary: "Replace a webhook's signing secret",
        params: WebhookParams,
        response: { 200: WebhookWithSecret },
      },
    },
    async (request) => webhooks.rotateSecret(currentUser(request).id, request.params.id),
  );

  app.post(
    "/webhooks/:id/test",
    {
      schema: {
        operationId: "testWebhook",
        summary: "Send a test event to a webhook",
        params: WebhookParams,
        response: { 200: WebhookTestResult },
      },
    },
    async (request) => webhooks.test(currentUser(request).id, request.params.id),
  );

  app.get(
    "/webhooks/:id/deliveries",
    {
      schema: {
        operationId: "listWebhookDeliveries",
        summary: "List a webhook's deliveries",
        params: WebhookParams,
        querystring: DeliveryListQuery,
        response: { 200: WebhookDeliveryList },
      },
    },
    async (request) => webhooks.deliveries(currentUser(request).id, request.params.id, request.query),
  );

  app.get(
    "/webhooks/:id/deliveries/:deliveryId",
    {
      schema: {
        operationId: "getWebhookDelivery",
        summary: "A webhook delivery with its attempts",
        params: DeliveryParams,
        response: { 200: WebhookDeliveryDetail },
      },
    },
    async (request) =>
      webhooks.delivery(currentUser(request).id, request.params.id, request.params.deliveryId),
  );

  // 202: queued again; the worker sends it at once (same X-Webhook-Id, a fresh retry schedule).
  app.post(
    "/webhooks/:id/deliveries/:deliveryId/redeliver",
    {
      schema: {
        operationId: "redeliverWebhookDelivery",
        summary: "Send a webhook delivery again",
        params: DeliveryParams,
        response: { 202: WebhookDelivery },
      },
    },
    async (request, reply) => {
      reply.code(202);
      return webhooks.redeliver(currentUser(request).id, request.params.id, request.params.deliveryId);
    },
  );
};
