import type { FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import { UnauthorizedError } from "../errors.js";

export interface AuthUser {
  id: number;
  email: string;
  name: string;
}

/**
 * Resolves the string after `Bearer ` to a user, or null. The one seam for credential types:
 * today JWT access tokens; API keys add a branch here, not a second guard.
 */
export type BearerResolver = (token: string) => Promise<AuthUser | null>;

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the guard on authenticated routes. */
    user: AuthUser | null;
  }
}

export function bearerToken(header: string | undefined): string | null {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? "");
  return match?.[1] ?? null;
}

/** An onRequest hook: runs before the body is read, so unauthenticated requests cost nothing. */
export function requireUser(resolve: BearerResolver): onRequestAsyncHookHandler {
  return async (request) => {
    const token = bearerToken(request.headers.authorization);
    if (!token) throw new UnauthorizedError("Not authenticated");
    const user = await resolve(token);
    if (!user) throw new UnauthorizedError("Could not validate credentials");
    request.user = user;
  };
}

export function currentUser(request: FastifyRequest): AuthUser {
  if (!request.user) throw new UnauthorizedError();
  return request.user;
}
