import type { FastifyReply, FastifyRequest, onResponseAsyncHookHandler } from "fastify";
import type { ApiLogService } from "../services/api-logs.js";

/**
 * For authenticated routes: every request that got past the guard goes into the API request log
 * (429s and errors included; 401s have no user to log them for). Buffered, see ApiLogService.
 */
export function logApiRequest(apiLogs: ApiLogService): onResponseAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const { user, credential } = request;
    if (!user || !credential) return;
    const query = request.url.indexOf("?");
    const path = query === -1 ? request.url : request.url.slice(0, query);
    apiLogs.record({
      userId: user.id,
      credential,
      method: request.method,
      path,
      route: request.routeOptions.url ?? path,
      statusCode: reply.statusCode,
      latencyMs: reply.elapsedTime,
    });
  };
}
