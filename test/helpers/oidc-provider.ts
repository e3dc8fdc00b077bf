import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';

/**
 * A real OpenID provider (the `oidc-provider` package) on the loopback, for single sign-on tests
 * (docs/sso.md). Its accounts are the test's: signing in at its login page as `login` (any
 * password) gives that account's claims. A test may change the ID tokens it issues before they
 * leave it (`tamper`), re-signed with the provider's own key (or another: `signWithStranger`),
 * to see the coordinator refuse a wrong audience, an expired token, a wrong nonce or a forged
 * signature.
 */

export interface TestAccount {
  email: string;
  /** `true` unless set; `undefined` leaves the claim out, as Microsoft Entra ID does. */
  email_verified?: boolean;
  /** Microsoft Entra ID's "email domain owner verified" (an optional claim there). */
  xms_edov?: boolean;
  groups?: string[];
  name?: string;
}

export interface TestOidcProvider {
  /** `http://127.0.0.1:<port>`, the issuer. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The coordinator's settings for this provider (add DROVER_OIDC_ALLOWED_DOMAINS, _ROLE_MAP ...). */
  env: Record<string, string>;
  /** Registers the coordinator's redirect URI; call once the coordinator listens, before any sign-in (again for another coordinator: the last one wins). */
  attach(redirectUri: string): void;
  /** Changes the claims of every ID token issued until set back to null. */
  tamper: ((claims: JWTPayload) => JWTPayload) | null;
  /** Signs the tampered ID tokens with a key that is not the provider's. */
  signWithStranger: boolean;
  /** Drops every connection to the provider, as a provider that is down would (no answer at all). */
  unreachable: boolean;
  /** Makes the token endpoint answer this status (a 502 of the provider's proxy, say) until set back to null. */
  tokenStatus: number | null;
  /**
   * Signs in at the provider's own pages without a browser, from the authorization URL the
   * coordinator redirected to: the login form as `login`; answers the redirect URI the provider
   * sends the browser back to (with `code` and `state`).
   */
  signInAs(login: string, authorizeUrl: string): Promise<URL>;
  close(): Promise<void>;
}

export async function startOidcProvider(accounts: Record<string, TestAccount>): Promise<TestOidcProvider> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'drover-test';
  const clientSecret = 'drover-test-secret-0123456789abcdef';
  const own = await generateKeyPair('RS256', { extractable: true });
  const stranger = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(own.privateKey)), kid: 'test-key', use: 'sig', alg: 'RS256' };
  let provider: Provider | null = null;
  // Requests go to the provider of the last `attach` (a test may attach a second coordinator).
  let handle: ((req: http.IncomingMessage, res: http.ServerResponse) => unknown) | null = null;
  server.on('request', (req, res) => {
    if (helper.unreachable) req.socket.destroy();
    else void handle?.(req, res);
  });

  const helper: TestOidcProvider = {
    issuer,
    clientId,
    clientSecret,
    env: { DROVER_OIDC_ISSUER: issuer, DROVER_OIDC_CLIENT_ID: clientId, DROVER_OIDC_CLIENT_SECRET: clientSecret },
    tamper: null,
    signWithStranger: false,
    unreachable: false,
    tokenStatus: null,
    attach(redirectUri) {
      provider = new Provider(issuer, {
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: [redirectUri],
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_post',
          },
        ],
        jwks: { keys: [jwk] },
        cookies: { keys: ['oidc-provider test cookie key'] },
        claims: { openid: ['sub'], email: ['email', 'email_verified', 'xms_edov'], profile: ['name', 'groups'] },
        // The scopes' claims in the ID token itself, as Keycloak and Google do.
        conformIdTokenClaims: false,
        pkce: { required: () => true },
        features: { devInteractions: { enabled: true } },
        async findAccount(_ctx, id) {
          const account = accounts[id];
          if (!account) return undefined;
          return {
            accountId: id,
            async claims() {
              return { sub: id, email_verified: true, ...account };
            },
          };
        },
        // A first-party client: the user is not asked to consent.
        async loadExistingGrant(ctx) {
          const grant = new ctx.oidc.provider.Grant({
            clientId: ctx.oidc.client!.clientId,
            accountId: ctx.oidc.session!.accountId!,
          });
          grant.addOIDCScope('openid email profile');
          await grant.save();
          return grant;
        },
      });
      provider.use(async (ctx, next) => {
        if (ctx.path === '/token' && helper.tokenStatus !== null) {
          ctx.status = helper.tokenStatus;
          ctx.body = 'the token endpoint failed';
          return;
        }
        await next();
        const tamper = helper.tamper;
        const body = ctx.body as { id_token?: string } | undefined;
        if (ctx.path === '/token' && tamper && body && typeof body.id_token === 'string') {
          const header = decodeProtectedHeader(body.id_token);
          const claims = tamper(decodeJwt(body.id_token));
          body.id_token = await new SignJWT(claims)
            .setProtectedHeader({ alg: 'RS256', kid: header.kid ?? 'test-key', typ: 'JWT' })
            .sign(helper.signWithStranger ? stranger.privateKey : own.privateKey);
        }
      });
      handle = provider.callback();
    },
    async signInAs(login, authorizeUrl) {
      if (!provider) throw new Error('attach the coordinator first');
      const jar = new Map<string, string>();
      const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      const keep = (res: Response) => {
        for (const line of res.headers.getSetCookie()) {
          const [pair = ''] = line.split(';');
          const at = pair.indexOf('=');
          jar.set(pair.slice(0, at), pair.slice(at + 1));
        }
      };
      let url = new URL(authorizeUrl);
      for (let hop = 0; hop < 10; hop++) {
        if (url.origin !== issuer) return url; // back to the coordinator
        let res = await fetch(url, { redirect: 'manual', headers: { cookie: cookie() } });
        keep(res);
        if (res.status === 200 && url.pathname.startsWith('/interaction/')) {
          // The login page: its form, as a person would send it.
          res = await fetch(url, {
            method: 'POST',
            redirect: 'manual',
            headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ prompt: 'login', login, password: 'any' }),
          });
          keep(res);
        }
        const location = res.headers.get('location');
        if (!location) throw new Error(`the provider answered ${res.status} at ${url.pathname}: ${await res.text()}`);
        url = new URL(location, url);
      }
      throw new Error('the provider never sent the browser back');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return helper;
}
