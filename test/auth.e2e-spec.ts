import { CREDENTIAL_CACHE_MS } from '../src/common/auth/credential-cache';
import { JwtService } from '@nestjs/jwt';
import * as bcrypt from 'bcrypt';
import { createHmac } from 'node:crypto';
import { ADMIN_PASSWORD, startTestApp, TestApp } from './support/test-app';

/** Login, logout, the current user, password change and how the guard treats every kind of credential. */

const USER_FIELDS = ['created_at', 'id', 'is_active', 'last_login_at', 'role', 'updated_at', 'username'];

const bearer = (token: string) => `Bearer ${token}`;
const cookie = (token: string) => `vigil_access_token=${token}`;

function claimsOf(token: string): { sub: string; sid: string; iat: number; exp: number } {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
}

function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** An HS256 JWT signed with `secret` (any claims, any header). */
function signHs256(header: object, payload: object, secret: string): string {
  const head = `${b64url(header)}.${b64url(payload)}`;
  return `${head}.${createHmac('sha256', secret).update(head).digest('base64url')}`;
}

function setCookies(res: { headers: Record<string, unknown> }): string[] {
  const raw = res.headers['set-cookie'];
  return Array.isArray(raw) ? (raw as string[]) : typeof raw === 'string' ? [raw] : [];
}

describe('auth (e2e)', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.adminToken();
  });
  afterAll(() => t.close());

  const login = (username: string, password: string) =>
    t.http.post('/api/v1/auth/login').send({ username, password });

  async function createUser(username: string, password: string, role: 'admin' | 'viewer' = 'viewer') {
    const res = await t.http
      .post('/api/v1/users')
      .set('Authorization', bearer(admin))
      .send({ username, password, role })
      .expect(201);
    return res.body.id as string;
  }

  async function tokenOf(username: string, password: string): Promise<string> {
    const res = await login(username, password).expect(200);
    return res.body.access_token as string;
  }

  async function sessionCount(userId?: string): Promise<number> {
    const rows = userId
      ? await t.sql<{ n: number }>('SELECT count(*)::int AS n FROM user_sessions WHERE user_id = $1', [
          userId,
        ])
      : await t.sql<{ n: number }>('SELECT count(*)::int AS n FROM user_sessions');
    return rows[0].n;
  }

  const me = (token: string) => t.http.get('/api/v1/auth/me').set('Authorization', bearer(token));

  describe('POST /auth/login', () => {
    it('returns a bearer JWT, the user record and an HttpOnly SameSite=Lax cookie holding the same token', async () => {
      const before = Date.now();
      const res = await login('admin', ADMIN_PASSWORD).expect(200);

      expect(res.body.token_type).toBe('bearer');
      expect(res.body.expires_in).toBe(24 * 3600);
      expect(typeof res.body.access_token).toBe('string');
      expect(res.body.access_token.split('.')).toHaveLength(3);
      const claims = claimsOf(res.body.access_token);
      expect(claims.exp - claims.iat).toBe(24 * 3600);

      expect(Object.keys(res.body.user).sort()).toEqual(USER_FIELDS);
      expect(res.body.user).toMatchObject({ username: 'admin', role: 'admin', is_active: true });
      expect(claims.sub).toBe(res.body.user.id);
      expect(Date.parse(res.body.user.last_login_at)).toBeGreaterThanOrEqual(before - 1000);
      expect(JSON.stringify(res.body)).not.toMatch(/password/i);

      const cookies = setCookies(res).filter((c) => c.startsWith('vigil_access_token='));
      expect(cookies).toHaveLength(1);
      const parts = cookies[0].split(';').map((p) => p.trim());
      expect(parts[0]).toBe(`vigil_access_token=${res.body.access_token}`);
      expect(parts).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Lax', 'Path=/', 'Max-Age=86400']));
      // Served over plain http here: a Secure cookie would never come back.
      expect(parts).not.toContain('Secure');

      // The session exists: the token works.
      const who = await me(res.body.access_token).expect(200);
      expect(who.body.id).toBe(res.body.user.id);
    });

    it('treats the username case-insensitively and ignores surrounding blanks', async () => {
      const res = await login('  AdMiN ', ADMIN_PASSWORD).expect(200);
      expect(res.body.user.username).toBe('admin');
      await me(res.body.access_token).expect(200);
    });

    it('answers 401 "Invalid credentials" for a wrong password or an unknown user, and opens no session', async () => {
      const sessions = await sessionCount();
      for (const [username, password] of [
        ['admin', 'wrong-password-123'],
        ['admin', ADMIN_PASSWORD.toUpperCase()],
        ['nobody-here', ADMIN_PASSWORD],
      ]) {
        const res = await login(username, password).expect(401);
        expect(res.body).toEqual({ detail: 'Invalid credentials', status_code: 401 });
        expect(setCookies(res).some((c) => c.startsWith('vigil_access_token='))).toBe(false);
      }
      expect(await sessionCount()).toBe(sessions);
    });

    it('refuses malformed requests with 4xx and opens no session', async () => {
      const sessions = await sessionCount();
      const cases: { body: unknown; field?: string }[] = [
        { body: { username: 'admin' }, field: 'body.password' },
        { body: { password: ADMIN_PASSWORD }, field: 'body.username' },
        { body: { username: 'admin', password: 12345678 }, field: 'body.password' },
        { body: { username: ['admin'], password: ADMIN_PASSWORD }, field: 'body.username' },
        { body: { username: '', password: ADMIN_PASSWORD }, field: 'body.username' },
        {
          body: { username: 'admin', password: ADMIN_PASSWORD, remember_me: true },
          field: 'body.remember_me',
        },
        { body: [{ username: 'admin', password: ADMIN_PASSWORD }], field: 'body' },
      ];
      for (const { body, field } of cases) {
        const res = await t.http
          .post('/api/v1/auth/login')
          .send(body as object)
          .expect(422);
        expect(res.body.status_code).toBe(422);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
        expect(res.body.access_token).toBeUndefined();
      }

      const malformed = await t.http
        .post('/api/v1/auth/login')
        .set('Content-Type', 'application/json')
        .send('{"username":"admin","password":')
        .expect(400);
      expect(malformed.body).toEqual({ detail: 'Malformed JSON in request body', status_code: 400 });

      const notJson = await t.http
        .post('/api/v1/auth/login')
        .set('Content-Type', 'application/x-www-form-urlencoded')
        .send(`username=admin&password=${ADMIN_PASSWORD}`)
        .expect(415);
      expect(notJson.body.status_code).toBe(415);

      expect(await sessionCount()).toBe(sessions);
    });
  });

  describe('credentials', () => {
    it('accepts the token as a Bearer header and as the cookie', async () => {
      const token = await tokenOf('admin', ADMIN_PASSWORD);
      const viaHeader = await me(token).expect(200);
      expect(viaHeader.body.username).toBe('admin');
      expect(Object.keys(viaHeader.body).sort()).toEqual(USER_FIELDS);

      const viaCookie = await t.http.get('/api/v1/auth/me').set('Cookie', cookie(token)).expect(200);
      expect(viaCookie.body.id).toBe(viaHeader.body.id);
      // The cookie also carries the role's scopes on scoped routes.
      await t.http.get('/api/v1/users').set('Cookie', cookie(token)).expect(200);
      // The scheme name is case-insensitive.
      await t.http.get('/api/v1/auth/me').set('Authorization', `bearer ${token}`).expect(200);
    });

    it('answers 401 "Not authenticated" without credentials', async () => {
      for (const path of ['/api/v1/auth/me', '/api/v1/users', '/api/v1/api-keys']) {
        const res = await t.http.get(path).expect(401);
        expect(res.body).toEqual({ detail: 'Not authenticated', status_code: 401 });
      }
      const logout = await t.http.post('/api/v1/auth/logout').expect(401);
      expect(logout.body.detail).toBe('Not authenticated');
    });

    it('refuses garbage, tampered, foreign-signed, unsigned and forged-session tokens with 401', async () => {
      const token = await tokenOf('admin', ADMIN_PASSWORD);
      const claims = claimsOf(token);
      const [head, payload, signature] = token.split('.');
      const viewerId = await createUser('token-victim', 'victim-password-1');

      const flipped = signature[0] === 'A' ? 'B' : 'A';
      const bad: Record<string, string> = {
        garbage: 'not-a-jwt',
        'three garbage parts': 'aaa.bbb.ccc',
        'signature altered': `${head}.${payload}.${flipped}${signature.slice(1)}`,
        'payload altered (other user, old signature)': `${head}.${b64url({ ...claims, sub: viewerId })}.${signature}`,
        'signed with another secret': signHs256({ alg: 'HS256', typ: 'JWT' }, claims, 'x'.repeat(48)),
        'alg none': `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims)}.`,
        'right secret, unknown session': signHs256(
          { alg: 'HS256', typ: 'JWT' },
          { ...claims, sid: '00000000-0000-4000-8000-000000000000' },
          t.config.jwtSecret,
        ),
        'right secret, session of another user': signHs256(
          { alg: 'HS256', typ: 'JWT' },
          { ...claims, sub: viewerId },
          t.config.jwtSecret,
        ),
        'right secret, no session id': signHs256(
          { alg: 'HS256', typ: 'JWT' },
          { sub: claims.sub, iat: claims.iat, exp: claims.exp },
          t.config.jwtSecret,
        ),
      };
      for (const [name, value] of Object.entries(bad)) {
        const viaHeader = await me(value);
        expect({ name, status: viaHeader.status, body: viaHeader.body }).toEqual({
          name,
          status: 401,
          body: { detail: 'Invalid or expired token', status_code: 401 },
        });
        const viaCookie = await t.http.get('/api/v1/users').set('Cookie', cookie(value));
        expect({ name, status: viaCookie.status }).toEqual({ name, status: 401 });
      }
      // An Authorization header that is not a bearer token is refused, even alongside a valid cookie.
      const basic = await t.http
        .get('/api/v1/auth/me')
        .set('Authorization', `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}`)
        .set('Cookie', cookie(token))
        .expect(401);
      expect(basic.body.detail).toBe('Invalid or expired token');

      // The genuine token still works: the refusals above were about the tokens, not the session.
      await me(token).expect(200);
    });

    it('refuses a correctly signed token whose exp has passed', async () => {
      const token = await tokenOf('admin', ADMIN_PASSWORD);
      const claims = claimsOf(token);
      const now = Math.floor(Date.now() / 1000);
      const jwt = new JwtService({ secret: t.config.jwtSecret });
      const expired = jwt.sign({ sub: claims.sub, sid: claims.sid, iat: now - 7200, exp: now - 60 });
      const control = jwt.sign({ sub: claims.sub, sid: claims.sid, iat: now, exp: now + 600 });

      // The same claims with a future exp are accepted, so only the expiry makes the difference.
      await me(control).expect(200);
      const res = await me(expired).expect(401);
      expect(res.body).toEqual({ detail: 'Invalid or expired token', status_code: 401 });
      await t.http.get('/api/v1/auth/me').set('Cookie', cookie(expired)).expect(401);
    });

    it('applies a role change to a session checked a moment ago at once', async () => {
      const admin = await tokenOf('admin', ADMIN_PASSWORD);
      const created = await t.http
        .post('/api/v1/users')
        .set('Authorization', bearer(admin))
        .send({ username: 'demoted', password: 'demoted-password', role: 'admin' })
        .expect(201);
      const token = await tokenOf('demoted', 'demoted-password');
      await t.http.get('/api/v1/users').set('Authorization', bearer(token)).expect(200);
      await t.http
        .put(`/api/v1/users/${created.body.id}`)
        .set('Authorization', bearer(admin))
        .send({ role: 'viewer' })
        .expect(200);
      await t.http.get('/api/v1/users').set('Authorization', bearer(token)).expect(403);
      await t.http.delete(`/api/v1/users/${created.body.id}`).set('Authorization', bearer(admin)).expect(204);
    });

    it('refuses a token whose session has expired in the database', async () => {
      const token = await tokenOf('admin', ADMIN_PASSWORD);
      await me(token).expect(200);
      await t.sql("UPDATE user_sessions SET expires_at = now() - interval '1 second' WHERE id = $1", [
        claimsOf(token).sid,
      ]);
      // A change made behind the service's back is seen once the checked session is no longer trusted (1 s).
      await new Promise((resolve) => setTimeout(resolve, CREDENTIAL_CACHE_MS + 100));
      const res = await me(token).expect(401);
      expect(res.body.detail).toBe('Invalid or expired token');
    });

    it('refuses API keys on session endpoints with 403 and changes nothing', async () => {
      const { key } = await t.createApiKey({ name: 'session-probe', scopes: ['admin'] });
      // The key itself is valid (admin scope works on a scoped route).
      await t.http.get('/api/v1/users').set('X-API-Key', key).expect(200);

      const forbidden = {
        detail: 'This endpoint requires a user session (cookie or bearer token)',
        status_code: 403,
      };
      const meRes = await t.http.get('/api/v1/auth/me').set('X-API-Key', key).expect(403);
      expect(meRes.body).toEqual(forbidden);
      const logoutRes = await t.http.post('/api/v1/auth/logout').set('X-API-Key', key).expect(403);
      expect(logoutRes.body).toEqual(forbidden);
      const change = await t.http
        .post('/api/v1/auth/change-password')
        .set('X-API-Key', key)
        .send({ current_password: ADMIN_PASSWORD, new_password: 'taken-over-by-key' })
        .expect(403);
      expect(change.body).toEqual(forbidden);
      // The password did not change.
      await login('admin', ADMIN_PASSWORD).expect(200);
      await login('admin', 'taken-over-by-key').expect(401);
    });

    it('lets X-API-Key alone decide: a bad key is 401 even with a valid session cookie', async () => {
      const token = await tokenOf('admin', ADMIN_PASSWORD);
      const res = await t.http
        .get('/api/v1/users')
        .set('Cookie', cookie(token))
        .set('X-API-Key', 'vgl_notARealKeyNotARealKeyNotARealKey1234')
        .expect(401);
      expect(res.body).toEqual({ detail: 'Invalid or expired API key', status_code: 401 });
    });
  });

  describe('roles', () => {
    it('gives a viewer its own record but 403 on admin routes, changing nothing', async () => {
      const viewerId = await createUser('Watcher', 'watcher-password-1');
      const token = await tokenOf('watcher', 'watcher-password-1');

      const who = await me(token).expect(200);
      expect(who.body).toMatchObject({ id: viewerId, username: 'watcher', role: 'viewer', is_active: true });

      const insufficient = { detail: 'Insufficient permissions. Required scope: admin', status_code: 403 };
      for (const path of ['/api/v1/users', `/api/v1/users/${viewerId}`, '/api/v1/api-keys']) {
        const res = await t.http.get(path).set('Authorization', bearer(token)).expect(403);
        expect(res.body).toEqual(insufficient);
      }
      const users = (await t.sql<{ n: number }>('SELECT count(*)::int AS n FROM users'))[0].n;
      const create = await t.http
        .post('/api/v1/users')
        .set('Authorization', bearer(token))
        .send({ username: 'sneaky', password: 'sneaky-password', role: 'admin' })
        .expect(403);
      expect(create.body).toEqual(insufficient);
      const promote = await t.http
        .put(`/api/v1/users/${viewerId}`)
        .set('Authorization', bearer(token))
        .send({ role: 'admin' })
        .expect(403);
      expect(promote.body).toEqual(insufficient);
      const key = await t.http
        .post('/api/v1/api-keys')
        .set('Authorization', bearer(token))
        .send({ name: 'viewer key', scopes: ['admin'] })
        .expect(403);
      expect(key.body).toEqual(insufficient);

      expect((await t.sql<{ n: number }>('SELECT count(*)::int AS n FROM users'))[0].n).toBe(users);
      expect((await me(token).expect(200)).body.role).toBe('viewer');
      expect(await t.sql('SELECT id FROM api_keys WHERE name = $1', ['viewer key'])).toEqual([]);
    });
  });

  describe('POST /auth/logout', () => {
    it('ends that session at once, clears the cookie, and leaves other sessions alone', async () => {
      const first = await tokenOf('admin', ADMIN_PASSWORD);
      const second = await tokenOf('admin', ADMIN_PASSWORD);
      await me(first).expect(200);

      const res = await t.http.post('/api/v1/auth/logout').set('Authorization', bearer(first)).expect(204);
      const cleared = setCookies(res).find((c) => c.startsWith('vigil_access_token='));
      expect(cleared).toBeDefined();
      expect(cleared).toMatch(/^vigil_access_token=;/);
      expect(cleared).toMatch(/Expires=Thu, 01 Jan 1970/);

      for (const req of [
        () => me(first),
        () => t.http.get('/api/v1/auth/me').set('Cookie', cookie(first)),
        () => t.http.get('/api/v1/users').set('Authorization', bearer(first)),
      ]) {
        const after = await req().expect(401);
        expect(after.body).toEqual({ detail: 'Invalid or expired token', status_code: 401 });
      }
      // Logging out twice with the same token: the token is already dead.
      await t.http.post('/api/v1/auth/logout').set('Authorization', bearer(first)).expect(401);

      await me(second).expect(200);
      const revoked = await t.sql<{ revoked_at: Date | null }>(
        'SELECT revoked_at FROM user_sessions WHERE id = $1',
        [claimsOf(first).sid],
      );
      expect(revoked[0].revoked_at).not.toBeNull();
    });

    it('works with the cookie alone', async () => {
      const token = await tokenOf('admin', ADMIN_PASSWORD);
      await t.http.post('/api/v1/auth/logout').set('Cookie', cookie(token)).expect(204);
      await t.http.get('/api/v1/auth/me').set('Cookie', cookie(token)).expect(401);
    });
  });

  describe('POST /auth/change-password', () => {
    const change = (token: string, body: unknown) =>
      t.http
        .post('/api/v1/auth/change-password')
        .set('Authorization', bearer(token))
        .send(body as object);

    it("changes the password, ends the user's other sessions and keeps the current one", async () => {
      const userId = await createUser('changer', 'first-password-1');
      const current = await tokenOf('changer', 'first-password-1');
      const other = await tokenOf('changer', 'first-password-1');
      const bystander = await tokenOf('admin', ADMIN_PASSWORD);
      const hashBefore = (
        await t.sql<{ h: string }>('SELECT password_hash AS h FROM users WHERE id = $1', [userId])
      )[0].h;

      await change(current, {
        current_password: 'first-password-1',
        new_password: 'second-password-2',
      }).expect(204);

      await me(current).expect(200);
      const dead = await me(other).expect(401);
      expect(dead.body.detail).toBe('Invalid or expired token');
      await me(bystander).expect(200);

      const old = await login('changer', 'first-password-1').expect(401);
      expect(old.body.detail).toBe('Invalid credentials');
      await login('changer', 'second-password-2').expect(200);

      const hashAfter = (
        await t.sql<{ h: string }>('SELECT password_hash AS h FROM users WHERE id = $1', [userId])
      )[0].h;
      expect(hashAfter).not.toBe(hashBefore);
      expect(hashAfter).not.toContain('second-password-2');
    });

    it('answers 400 for a wrong current password and changes nothing', async () => {
      await createUser('forgetful', 'real-password-1');
      const current = await tokenOf('forgetful', 'real-password-1');
      const other = await tokenOf('forgetful', 'real-password-1');

      const res = await change(current, {
        current_password: 'guessed-password',
        new_password: 'attacker-password',
      }).expect(400);
      expect(res.body).toEqual({ detail: 'Current password is incorrect', status_code: 400 });

      await me(current).expect(200);
      await me(other).expect(200);
      await login('forgetful', 'attacker-password').expect(401);
      await login('forgetful', 'real-password-1').expect(200);
    });

    it('refuses invalid new passwords and malformed bodies with 4xx and changes nothing', async () => {
      await createUser('careful', 'kept-password-1');
      const current = await tokenOf('careful', 'kept-password-1');
      const other = await tokenOf('careful', 'kept-password-1');

      const cases: { body: unknown; field: string }[] = [
        {
          body: { current_password: 'kept-password-1', new_password: 'short7!' },
          field: 'body.new_password',
        },
        {
          body: { current_password: 'kept-password-1', new_password: 'x'.repeat(73) },
          field: 'body.new_password',
        },
        // 37 characters but 74 bytes in UTF-8: over bcrypt's 72-byte limit.
        {
          body: { current_password: 'kept-password-1', new_password: 'é'.repeat(37) },
          field: 'body.new_password',
        },
        {
          body: { current_password: 'kept-password-1', new_password: 123456789 },
          field: 'body.new_password',
        },
        { body: { current_password: 'kept-password-1' }, field: 'body.new_password' },
        { body: { new_password: 'valid-new-password' }, field: 'body.current_password' },
        {
          body: { current_password: 'kept-password-1', new_password: 'valid-new-password', logout_all: true },
          field: 'body.logout_all',
        },
        { body: ['kept-password-1', 'valid-new-password'], field: 'body' },
      ];
      for (const { body, field } of cases) {
        const res = await change(current, body).expect(422);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      }
      await t.http
        .post('/api/v1/auth/change-password')
        .set('Authorization', bearer(current))
        .set('Content-Type', 'application/json')
        .send('{"current_password": "kept-password-1", "new_password": ')
        .expect(400);

      await me(other).expect(200);
      await login('careful', 'kept-password-1').expect(200);
      for (const attempted of ['short7!', 'x'.repeat(73), 'é'.repeat(37), 'valid-new-password']) {
        await login('careful', attempted).expect(401);
      }
    });

    it('lets a viewer change their own password', async () => {
      await createUser('viewer-changer', 'viewer-password-1');
      const token = await tokenOf('viewer-changer', 'viewer-password-1');
      await change(token, {
        current_password: 'viewer-password-1',
        new_password: 'viewer-password-2',
      }).expect(204);
      await login('viewer-changer', 'viewer-password-2').expect(200);
      await login('viewer-changer', 'viewer-password-1').expect(401);
    });
  });

  describe('login limiter (10 failures per 15 minutes per username and IP)', () => {
    it('refuses even the right password with 429 and Retry-After after 10 failures', async () => {
      const userId = await createUser('limited', 'limited-password-1');
      for (let i = 1; i <= 10; i++) {
        const res = await login('limited', `wrong-password-${i}`);
        expect({ attempt: i, status: res.status }).toEqual({ attempt: i, status: 401 });
      }
      const sessionsBefore = await sessionCount(userId);

      const refused = await login('limited', 'limited-password-1').expect(429);
      expect(refused.body.status_code).toBe(429);
      expect(refused.body.detail).toMatch(/^Too many failed login attempts\. Retry after \d+ seconds\.$/);
      const retryAfter = Number(refused.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(15 * 60);
      expect(refused.body.detail).toContain(`Retry after ${retryAfter} seconds`);
      expect(refused.body.access_token).toBeUndefined();

      // The same username in other case, and a forged X-Forwarded-For (no trusted proxy here), do not escape it.
      await login('LIMITED', 'limited-password-1').expect(429);
      await login('limited', 'limited-password-1').set('X-Forwarded-For', '203.0.113.9').expect(429);
      expect(await sessionCount(userId)).toBe(sessionsBefore);

      // Other usernames from the same IP are unaffected.
      await login('admin', ADMIN_PASSWORD).expect(200);
    });

    it('resets the failure count after a successful login', async () => {
      await createUser('resetter', 'resetter-password-1');
      for (let i = 1; i <= 9; i++) await login('resetter', `wrong-${i}-password`).expect(401);
      await login('resetter', 'resetter-password-1').expect(200);
      // Without the reset, the next failure would be the 10th and the one after that 429.
      for (let i = 1; i <= 10; i++) {
        const res = await login('resetter', `wrong-again-${i}`);
        expect({ attempt: i, status: res.status }).toEqual({ attempt: i, status: 401 });
      }
      await login('resetter', 'resetter-password-1').expect(429);
    });

    it('allows no more than 10 guesses when they arrive all at once', async () => {
      const userId = await createUser('burst', 'burst-password-1');
      // A production-strength hash (tests otherwise use cost 4) makes each guess take as long as it
      // would in production, which is when concurrent guesses overlap.
      await t.sql('UPDATE users SET password_hash = $1 WHERE id = $2', [
        await bcrypt.hash('burst-password-1', 10),
        userId,
      ]);
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) => login('burst', `guess-number-${i}`).then((r) => r.status)),
      );
      expect(results.filter((s) => s !== 401 && s !== 429)).toEqual([]);
      expect(results.filter((s) => s === 401)).toHaveLength(10);
      expect(results.filter((s) => s === 429)).toHaveLength(20);
      await login('burst', 'burst-password-1').expect(429);
    });
  });
});
