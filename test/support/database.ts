import { Client } from 'pg';

/** Named per `npm test` run, so parallel runs on one server do not collide. Set by the global set-up. */
export function templateDatabase(): string {
  const name = process.env.VIGIL_TEST_TEMPLATE;
  if (!name)
    throw new Error('VIGIL_TEST_TEMPLATE is not set: run the tests with `npm test` (jest global set-up)');
  return name;
}

/** The test server's URL with another database name. */
export function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs one statement on the server's maintenance database (CREATE/DROP DATABASE and the like). */
export async function adminQuery(serverUrl: string, sql: string, params: unknown[] = []): Promise<unknown[]> {
  const client = new Client({ connectionString: databaseUrl(serverUrl, 'postgres') });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

export function testServerUrl(): string {
  const url = process.env.VIGIL_TEST_SERVER_URL;
  if (!url)
    throw new Error('VIGIL_TEST_SERVER_URL is not set: run the tests with `npm test` (jest global set-up)');
  return url;
}
