export { adminQuery, databaseUrl } from '../../src/database/server-admin';

/** Named per `npm test` run, so parallel runs on one server do not collide. Set by the global set-up. */
export function templateDatabase(): string {
  const name = process.env.VIGIL_TEST_TEMPLATE;
  if (!name)
    throw new Error('VIGIL_TEST_TEMPLATE is not set: run the tests with `npm test` (jest global set-up)');
  return name;
}

export function testServerUrl(): string {
  const url = process.env.VIGIL_TEST_SERVER_URL;
  if (!url)
    throw new Error('VIGIL_TEST_SERVER_URL is not set: run the tests with `npm test` (jest global set-up)');
  return url;
}
