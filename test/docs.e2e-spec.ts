import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { startTestApp, TestApp } from './support/test-app';

/** The interface documentation: /docs (Swagger UI), /redoc (ReDoc) and /openapi.json, all public and local. */

interface Schema {
  $ref?: string;
  properties?: Record<string, unknown>;
  required?: string[];
}
interface ResponseObject {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: Schema }>;
}
interface Operation {
  operationId?: string;
  'x-required-scope'?: string;
  parameters?: { name: string; in: string; required?: boolean }[];
  requestBody?: unknown;
  security?: Record<string, unknown>[];
  responses: Record<string, ResponseObject>;
}
interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, unknown> };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const SCOPES = ['none', 'session', 'read:events', 'read:cameras', 'write:cameras', 'admin'];
const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];
const ERROR_SCHEMA = '#/components/schemas/ErrorResponseDto';

/** Every `src="..."` and `href="..."` of a page. */
function references(html: string): string[] {
  return [...html.matchAll(/\b(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]);
}

describe('interface documentation', () => {
  let t: TestApp;
  let doc: OpenApiDocument;
  const operations: { method: string; path: string; op: Operation }[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    doc = (await request(t.baseUrl).get('/openapi.json').expect(200)).body as OpenApiDocument;
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        if (METHODS.includes(method)) operations.push({ method, path, op });
      }
    }
  });
  afterAll(() => t.close());

  describe('/docs (Swagger UI)', () => {
    it('serves the Swagger UI page without credentials', async () => {
      const res = await request(t.baseUrl).get('/docs').expect(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('id="swagger-ui"');
      expect(res.text).toContain('<title>Vigil API</title>');
    });

    it('loads every script and stylesheet from this server', async () => {
      const page = await request(t.baseUrl).get('/docs').expect(200);
      const refs = references(page.text);
      expect(refs.some((r) => r.endsWith('swagger-ui-bundle.js'))).toBe(true);
      expect(refs.some((r) => r.endsWith('.css'))).toBe(true);
      for (const ref of refs) {
        expect(ref).not.toMatch(/^(https?:)?\/\//);
        const url = new URL(ref, `${t.baseUrl}/docs`);
        const asset = await request(t.baseUrl).get(url.pathname);
        expect({ ref, status: asset.status }).toEqual({ ref, status: 200 });
        if (ref.endsWith('.js')) expect(asset.headers['content-type']).toMatch(/javascript/);
      }
      // The initialiser points Swagger UI at this service's document.
      const init = await request(t.baseUrl).get('/docs/swagger-ui-init.js').expect(200);
      expect(init.text).toContain('Vigil API');
      expect(init.text).toContain('/api/v1/system/health');
    });
  });

  describe('/redoc (ReDoc)', () => {
    it('serves a page that loads ReDoc from this server and reads /openapi.json, with no CDN', async () => {
      for (const path of ['/redoc', '/redoc/']) {
        const res = await request(t.baseUrl).get(path).expect(200);
        expect(res.headers['content-type']).toMatch(/^text\/html/);
        expect(res.text).toMatch(/<redoc[^>]+spec-url="\/openapi\.json"/);
        expect(res.text).toContain('<script src="/redoc/redoc.standalone.js"></script>');
        expect(res.text).not.toMatch(/https?:\/\//);
        expect(res.text).not.toMatch(/cdn|unpkg|jsdelivr/i);
        for (const ref of references(res.text)) expect(ref).toMatch(/^\/(?!\/)/);
      }
    });

    it('serves the ReDoc script itself, and the page CSP allows it', async () => {
      const script = await request(t.baseUrl).get('/redoc/redoc.standalone.js').expect(200);
      expect(script.headers['content-type']).toMatch(/javascript/);
      expect(script.text.length).toBeGreaterThan(100_000);
      expect(script.text).toMatch(/redoc/i);
      const page = await request(t.baseUrl).get('/redoc').expect(200);
      const csp = String(page.headers['content-security-policy']);
      expect(csp).toMatch(/script-src 'self'/);
      // ReDoc renders with a web worker from a blob: URL.
      expect(csp).toMatch(/worker-src[^;]*blob:/);
    });
  });

  describe('/openapi.json', () => {
    it('is public JSON describing OpenAPI 3 with this version of the service', async () => {
      const res = await request(t.baseUrl).get('/openapi.json').expect(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/);
      const pkg = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as {
        version: string;
      };
      expect(doc.info.version).toBe(pkg.version);
      expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['api_key', 'bearer', 'cookie']);
    });

    it('describes the routes of the running service under /api/v1', () => {
      const described = operations.map((o) => `${o.method.toUpperCase()} ${o.path}`);
      expect(described).toEqual(
        expect.arrayContaining([
          'GET /api/v1/system/health',
          'POST /api/v1/auth/login',
          'GET /api/v1/api-keys',
          'POST /api/v1/api-keys',
          'GET /api/v1/api-keys/{key_id}',
          'DELETE /api/v1/api-keys/{key_id}',
          'GET /api/v1/api-keys/{key_id}/usage',
        ]),
      );
      for (const { path } of operations) expect(path).toMatch(/^\/api\/v1\//);
    });

    it('gives every operation a unique operationId and an x-required-scope', () => {
      const problems: string[] = [];
      for (const { method, path, op } of operations) {
        if (!op.operationId || !/^[a-z][A-Za-z]+$/.test(op.operationId))
          problems.push(`${method} ${path}: operationId ${op.operationId}`);
        if (!SCOPES.includes(op['x-required-scope'] ?? ''))
          problems.push(`${method} ${path}: x-required-scope ${op['x-required-scope']}`);
      }
      expect(problems).toEqual([]);
      const ids = operations.map((o) => o.op.operationId);
      expect(new Set(ids).size).toBe(ids.length);
      const scopeOf = (id: string) => operations.find((o) => o.op.operationId === id)?.op['x-required-scope'];
      expect(scopeOf('createApiKey')).toBe('admin');
      expect(scopeOf('getHealth')).toBe('none');
      const publicOps = operations
        .filter((o) => o.op['x-required-scope'] === 'none')
        .map((o) => o.op.operationId);
      expect(publicOps.sort()).toEqual(['getHealth', 'login']);
    });

    it('declares every path parameter in its path, as required', () => {
      const problems: string[] = [];
      for (const { method, path, op } of operations) {
        const inTemplate = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
        const declared = (op.parameters ?? []).filter((p) => p.in === 'path');
        const names = declared.map((p) => p.name).sort();
        if (JSON.stringify(names) !== JSON.stringify(inTemplate))
          problems.push(`${method} ${path}: declares path parameters [${names.join(', ')}]`);
        for (const p of declared)
          if (p.required !== true) problems.push(`${method} ${path}: ${p.name} optional`);
      }
      expect(problems).toEqual([]);
    });

    it('documents 401, 403 and 429 (with rate-limit headers) on every non-public operation', () => {
      const problems: string[] = [];
      for (const { method, path, op } of operations) {
        if (op['x-required-scope'] === 'none') continue;
        const name = `${method} ${path}`;
        for (const status of ['401', '403', '429'])
          if (!op.responses[status]) problems.push(`${name}: no ${status}`);
        const headers = Object.keys(op.responses['429']?.headers ?? {});
        for (const header of [...RATE_LIMIT_HEADERS, 'Retry-After'])
          if (!headers.includes(header)) problems.push(`${name} 429: no ${header} header`);
        const schemes = [...new Set((op.security ?? []).flatMap((s) => Object.keys(s)))].sort();
        const expected =
          op['x-required-scope'] === 'session' ? ['bearer', 'cookie'] : ['api_key', 'bearer', 'cookie'];
        if (JSON.stringify(schemes) !== JSON.stringify(expected))
          problems.push(`${name}: security [${schemes.join(', ')}]`);
      }
      expect(problems).toEqual([]);
    });

    it('documents a success response, with the rate-limit headers, on every operation', () => {
      const problems: string[] = [];
      for (const { method, path, op } of operations) {
        const successes = Object.keys(op.responses).filter((s) => /^2\d\d$/.test(s));
        if (successes.length === 0) problems.push(`${method} ${path}: no success response`);
        for (const status of successes) {
          const headers = Object.keys(op.responses[status].headers ?? {});
          for (const header of RATE_LIMIT_HEADERS)
            if (!headers.includes(header)) problems.push(`${method} ${path} ${status}: no ${header} header`);
        }
      }
      expect(problems).toEqual([]);
    });

    it('documents the 4xx answers an operation can give: bodies 400/413/415/422, ids 404, queries 422', () => {
      const problems: string[] = [];
      for (const { method, path, op } of operations) {
        const expected: string[] = [];
        if (op.requestBody) expected.push('400', '413', '415', '422');
        if ((op.parameters ?? []).some((p) => p.in === 'path')) expected.push('404');
        if ((op.parameters ?? []).some((p) => p.in === 'query')) expected.push('422');
        for (const status of expected)
          if (!op.responses[status]) problems.push(`${method} ${path}: no ${status}`);
      }
      expect(problems).toEqual([]);
    });

    it('describes every error response with the ErrorResponseDto envelope', () => {
      const envelope = doc.components.schemas.ErrorResponseDto;
      expect([...(envelope.required ?? [])].sort()).toEqual(['detail', 'status_code']);
      expect(Object.keys(envelope.properties ?? {}).sort()).toEqual(['detail', 'errors', 'status_code']);
      const problems: string[] = [];
      let errorResponses = 0;
      for (const { method, path, op } of operations) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (!/^[45]\d\d$/.test(status)) continue;
          errorResponses += 1;
          const name = `${method} ${path} ${status}`;
          const ref = response.content?.['application/json']?.schema?.$ref;
          if (ref === ERROR_SCHEMA) continue;
          // Only a 5xx may use a richer body (health's 503), and it must still carry detail and status_code.
          const fields = Object.keys(
            doc.components.schemas[String(ref).split('/').pop() ?? '']?.properties ?? {},
          );
          if (!status.startsWith('5') || !fields.includes('detail') || !fields.includes('status_code'))
            problems.push(`${name}: schema ${ref}`);
        }
      }
      expect(errorResponses).toBeGreaterThan(operations.length * 2);
      expect(problems).toEqual([]);
    });
  });

  describe('the document matches the running service', () => {
    const sample = (path: string) => path.replace(/\{[^}]+\}/g, '0b4f1a9e-6c3d-4d7e-9a51-2f0c8e6b1d23');

    it('every non-public operation exists and refuses anonymous callers with 401', async () => {
      for (const { method, path, op } of operations) {
        if (op['x-required-scope'] === 'none') continue;
        const res = await t.http[method as 'get' | 'post' | 'put' | 'delete' | 'patch'](sample(path));
        expect({ operation: `${method} ${path}`, status: res.status, body: res.body }).toEqual({
          operation: `${method} ${path}`,
          status: 401,
          body: { detail: 'Not authenticated', status_code: 401 },
        });
      }
    });

    it('x-required-scope is what the service enforces for API keys', async () => {
      const { key } = await t.createApiKey({
        name: 'docs scope check',
        scopes: ['read:events', 'read:cameras', 'write:cameras'],
        rate_limit_per_minute: 1000,
      });
      for (const { method, path, op } of operations) {
        const scope = op['x-required-scope'];
        if (
          scope === 'none' ||
          scope === 'read:events' ||
          scope === 'read:cameras' ||
          scope === 'write:cameras'
        )
          continue;
        const res = await t.http[method as 'get' | 'post' | 'put' | 'delete' | 'patch'](sample(path)).set(
          'X-API-Key',
          key,
        );
        const detail =
          scope === 'admin'
            ? 'Insufficient permissions. Required scope: admin'
            : 'This endpoint requires a user session (cookie or bearer token)';
        expect({ operation: `${method} ${path}`, status: res.status, detail: res.body.detail }).toEqual({
          operation: `${method} ${path}`,
          status: 403,
          detail,
        });
      }
    });
  });
});
