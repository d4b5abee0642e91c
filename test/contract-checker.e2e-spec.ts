import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Response } from 'supertest';
import { ContractChecker } from './support/contract';

/** The contract checker must catch what it is there to catch; otherwise every e2e test's check is hollow. */
describe('contract checker', () => {
  const document = JSON.parse(readFileSync(join(__dirname, '..', 'openapi.json'), 'utf8'));
  const checker = new ContractChecker(document);
  const response = (status: number, body: unknown) =>
    ({ status, body, headers: { 'content-type': 'application/json; charset=utf-8' } }) as unknown as Response;

  it('accepts a documented status with a matching body', () => {
    expect(() =>
      checker.check(
        'get',
        '/api/v1/api-keys/0b4f1a9e-6c3d-4d7e-9a51-2f0c8e6b1d23',
        response(404, { detail: 'API key not found', status_code: 404 }),
      ),
    ).not.toThrow();
  });

  it('rejects a status the operation does not document', () => {
    expect(() =>
      checker.check('get', '/api/v1/api-keys', response(409, { detail: 'x', status_code: 409 })),
    ).toThrow(/does not document/);
  });

  it('rejects a body that does not match the schema', () => {
    expect(() =>
      checker.check(
        'get',
        '/api/v1/api-keys/0b4f1a9e-6c3d-4d7e-9a51-2f0c8e6b1d23',
        response(200, { id: 'x', name: 1 }),
      ),
    ).toThrow(/does not match/);
    expect(() => checker.check('get', '/api/v1/api-keys', response(401, { message: 'no' }))).toThrow(
      /does not match/,
    );
  });
});
