/** A small JSON client over real HTTP (undici's fetch) for end-to-end tests. */
import { Agent, fetch as undiciFetch, type Dispatcher } from 'undici';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is, instead of JSON-encoding `body`. */
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
  /** Overrides the client's bearer token for this call (null: none). */
  token?: string | null;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string | null = null,
    /** Connects from this local address (any 127.x.y.z: a distinct client on loopback). */
    private readonly dispatcher?: Dispatcher,
  ) {}

  withToken(token: string | null): ApiClient {
    return new ApiClient(this.baseUrl, token, this.dispatcher);
  }

  /** The same client, connecting from `localAddress` (for per-address limits). */
  fromAddress(localAddress: string): ApiClient {
    return new ApiClient(this.baseUrl, this.token, new Agent({ localAddress }));
  }

  /** Signs in and returns a client carrying the session token. */
  async login(email: string, password: string): Promise<ApiClient> {
    const res = await this.post<{ token: string }>('/auth/login', { body: { email, password }, token: null });
    if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
    return this.withToken(res.body.token);
  }

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    const token = options.token === undefined ? this.token : options.token;
    if (token) headers.authorization = `Bearer ${token}`;
    let body: string | Uint8Array | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await undiciFetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      body,
      ...(this.dispatcher ? { dispatcher: this.dispatcher } : {}),
    });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  get<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('GET', path, options);
  }
  post<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('POST', path, options);
  }
  patch<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('PATCH', path, options);
  }
  put<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('PUT', path, options);
  }
  delete<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('DELETE', path, options);
  }
}
