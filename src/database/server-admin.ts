import { Client } from 'pg';

/**
 * Maintenance of a PostgreSQL server (CREATE/DROP DATABASE and the like), shared by the migration
 * scripts, the test set-up and the benchmarks.
 */

/** The server's URL with another database name. */
export function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs one statement on the server's maintenance database `postgres` and returns its rows. */
export async function adminQuery<T = Record<string, unknown>>(
  serverUrl: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new Client({ connectionString: databaseUrl(serverUrl, 'postgres') });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}
