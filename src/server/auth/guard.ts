import type { FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import { UnauthorizedError } from "../errors.js";

export interface AuthUser {
  id: number;
  email: string;
  name: string;
}

/** Which credential authenticated a request: rate limits and API request logs are kept per credential. */
export type Credential = { kind: "access_token" } | { kind: "api_key"; keyId: number };

export interface Principal {
  user: AuthUser;
  credential: Credential;
}

/**
 * Resolves the string after `Bearer ` to a user and the credential used, or null. The one seam
 * for credential types: JWT access tokens and API keys are branches here, not second guards.
 */
export type BearerResolver = (token: string) => Promise<Principal | null>;

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the guard on authenticated routes. */
    user: AuthUser | null;
    /** Set with `user`. */
    credential: Credential | null;
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
    const principal = await resolve(token);
    if (!principal) throw new UnauthorizedError("Could not validate credentials");
    request.user = principal.user;
    request.credential = principal.credential;
  };
}

export function currentUser(request: FastifyRequest): AuthUser {
  if (!request.user) throw new UnauthorizedError();
  return request.user;
}
