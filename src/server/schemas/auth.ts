import { z } from "zod";

export const RegisterBody = z.object({
  email: z.email().max(320),
  password: z.string().min(8, "password must be at least 8 characters").max(256),
  name: z.string().trim().min(1).max(200),
});
export type RegisterBody = z.infer<typeof RegisterBody>;

export const LoginBody = z.object({
  email: z.string().max(320),
  password: z.string().max(256),
});
export type LoginBody = z.infer<typeof LoginBody>;

export const RefreshBody = z.object({ refresh_token: z.string().min(1) });

export const AuthResult = z.object({
  access_token: z.string(),
  refresh_token: z.string(),
  token_type: z.literal("bearer"),
  /** "usr_<id>" from register, the integer from login (spec §2). */
  user_id: z.union([z.string(), z.number().int()]),
  email: z.string(),
  name: z.string(),
});
export type AuthResult = z.infer<typeof AuthResult>;

export const RefreshResult = z.object({
  access_token: z.string(),
  refresh_token: z
    .string()
    .describe(
      "The refresh token to use next time: each refresh token works once, and using one again ends its sign-in",
    ),
  token_type: z.literal("bearer"),
});
export type RefreshResult = z.infer<typeof RefreshResult>;

export const LogoutResult = z.object({ message: z.string() });
export type LogoutResult = z.infer<typeof LogoutResult>;

export const RevokeSessionsResult = z.object({ message: z.string() });
export type RevokeSessionsResult = z.infer<typeof RevokeSessionsResult>;

/** The OAuth sign-in providers this server offers. */
export const ProviderList = z.object({
  providers: z
    .array(
      z.object({
        name: z.string().describe("The path segment of /auth/oauth/{provider}"),
        label: z.string(),
      }),
    )
    .describe("Only the providers configured on this server"),
});
