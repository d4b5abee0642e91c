import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Response } from 'supertest';

interface Operation {
  responses: Record<
    string,
    { content?: Record<string, { schema?: unknown }>; headers?: Record<string, unknown> }
  >;
}
type OpenApi = {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown> };
};

/**
 * Checks responses against the service's own OpenAPI document: the status must be documented for the
 * operation and a JSON body must validate against the documented schema. Every request a test sends
 * through `TestClient` is checked, so the published contract is the one the tests exercise.
 */
export class ContractChecker {
  private readonly ajv: Ajv;
  private readonly routes: { method: string; pattern: RegExp; template: string; operation: Operation }[] = [];
  private readonly validators = new Map<string, ValidateFunction>();
  readonly checked = new Set<string>();

  constructor(private readonly document: OpenApi) {
    this.ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addFormat('password', true);
    // Documented objects are closed: a field the document does not declare (a leaked hash, say) fails.
    const components = JSON.parse(JSON.stringify(document.components ?? {})) as {
      schemas?: Record<string, Record<string, unknown>>;
    };
    for (const schema of Object.values(components.schemas ?? {})) {
      if (schema.properties && schema.additionalProperties === undefined) schema.additionalProperties = false;
    }
    this.ajv.addSchema({ $id: 'openapi', components });
    for (const [template, methods] of Object.entries(document.paths)) {
      const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`);
      for (const [method, operation] of Object.entries(methods)) {
        this.routes.push({ method: method.toUpperCase(), pattern, template, operation });
      }
    }
    // Literal segments win over parameters (/events/stats before /events/{id}).
    this.routes.sort((a, b) => a.template.split('{').length - b.template.split('{').length);
  }

  check(method: string, url: string, res: Response): void {
    const path = new URL(url, 'http://x').pathname;
    const route = this.routes.find((r) => r.method === method.toUpperCase() && r.pattern.test(path));
    if (!route) return; // not an API operation (unknown route, docs pages)
    const key = `${route.method} ${route.template} ${res.status}`;
    const documented = route.operation.responses[String(res.status)] ?? route.operation.responses.default;
    if (!documented) {
      throw new Error(
        `Contract: ${route.method} ${route.template} answered ${res.status}, which its OpenAPI operation does not document`,
      );
    }
    const schema = documented.content?.['application/json']?.schema;
    const isJson = /application\/json/.test(String(res.headers['content-type'] ?? ''));
    if (schema && isJson) {
      const validate = this.validator(key, schema);
      if (!validate(res.body)) {
        throw new Error(
          `Contract: ${key} body does not match its schema: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(res.body).slice(0, 500)}`,
        );
      }
    }
    this.checked.add(key);
  }

  private validator(key: string, schema: unknown): ValidateFunction {
    let validate = this.validators.get(key);
    if (!validate) {
      const rewritten = JSON.parse(
        JSON.stringify(schema).replace(/"#\/components\//g, '"openapi#/components/'),
      );
      validate = this.ajv.compile(rewritten);
      this.validators.set(key, validate);
    }
    return validate;
  }
}
