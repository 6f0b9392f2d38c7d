/**
 * OAuth 2.1 for the assistant connector (`@cloudflare/workers-oauth-provider`): discovery
 * documents, dynamic client registration, PKCE, code exchange and refresh-token rotation are
 * the library's; `/authorize` (sign-in and consent) is ours (src/web/authorize.tsx). Only
 * `/api/mcp` takes OAuth access tokens, and it takes nothing else: a REST key there is just
 * an invalid token (401), and an OAuth token on /api/v1 is not a key (401).
 *
 * The protected resource is `<origin>/api/mcp`, the URL a person pastes; tokens are bound to
 * it, so one provider is kept per origin the Worker answers on. Client ID Metadata Documents
 * are not enabled: they need the `global_fetch_strictly_public` flag, which would also stop
 * this Worker from reaching its backend and payment provider on private addresses.
 */
import {
  getOAuthApi,
  OAuthProvider,
  type OAuthHelpers,
  type OAuthProviderOptions,
} from "@cloudflare/workers-oauth-provider";
import type { Env } from "../env";
import { TOKEN_ENDPOINT } from "./refresh-reuse";
import { assistantScopes } from "../services/accounts/connected-apps";

export const MCP_ROUTE = "/api/mcp";
/** The OAuth scopes a person grants on the consent page (src/services/accounts/connected-apps.ts assistantScopes). */
export const MCP_SCOPES = assistantScopes;

export interface McpGrantProps {
  accountId: string;
  /** What the owner allowed this assistant (assistant_connections); absent on grants made before scopes existed. */
  connectionId?: string;
}

interface Handlers {
  app: ExportedHandler<Env>;
  mcp: (request: Request, env: Env, props: McpGrantProps, ctx: ExecutionContext) => Promise<Response>;
}

const providers = new Map<string, { provider: OAuthProvider<Env>; options: OAuthProviderOptions<Env> }>();

/** A refresh token unused this long is refused; the grant's record of issued tokens lasts as long. */
export const REFRESH_TOKEN_TTL_SECONDS = 90 * 24 * 3600;

/** OAuth resources must be https, or http on a loopback host (local development). */
export function canServeOAuth(origin: string): boolean {
  const url = new URL(origin);
  return url.protocol === "https:" || ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
}

/** The provider for this origin, or null when the origin cannot carry OAuth (plain http elsewhere). */
export function oauthProviderFor(origin: string, handlers: Handlers): OAuthProvider<Env> | null {
  if (!canServeOAuth(origin)) return null;
  let entry = providers.get(origin);
  if (!entry) {
    const options: OAuthProviderOptions<Env> = {
      apiRoute: MCP_ROUTE,
      apiHandler: {
        fetch: (request, env, ctx) =>
          handlers.mcp(
            request,
            env,
            (ctx as unknown as { props: McpGrantProps }).props,
            ctx as unknown as ExecutionContext,
          ),
      },
      defaultHandler: handlers.app,
      authorizeEndpoint: "/authorize",
      tokenEndpoint: TOKEN_ENDPOINT,
      clientRegistrationEndpoint: "/oauth/register",
      scopesSupported: [...MCP_SCOPES],
      resourceMetadata: { resource: `${origin}${MCP_ROUTE}`, resource_name: "Media processing API" },
      // Native apps (Cursor, editors) receive the code on their own URI scheme (RFC 8252 7.1);
      // PKCE, required for every client, keeps an app that claims the same scheme from using it.
      allowPrivateUseRedirectUris: true,
      accessTokenTTL: 3600,
      refreshTokenTTL: REFRESH_TOKEN_TTL_SECONDS,
    };
    entry = { provider: new OAuthProvider<Env>(options), options };
    providers.set(origin, entry);
  }
  return entry.provider;
}

/** The library's helpers (grants, revocation) for an origin whose provider exists. */
export function oauthApiFor(origin: string, env: Env): OAuthHelpers | null {
  const entry = providers.get(origin);
  return entry ? getOAuthApi(entry.options, env) : null;
}
