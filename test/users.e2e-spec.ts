import * as bcrypt from 'bcrypt';
import { ADMIN_PASSWORD, startTestApp, TestApp } from './support/test-app';

/** /users: admin-only user management, its validation, and what it does to sessions and logins. */

const USER_FIELDS = ['created_at', 'id', 'is_active', 'last_login_at', 'role', 'updated_at', 'username'];
const UNKNOWN_ID = '6f1c2b8e-4d3a-4f5e-9a7b-0c1d2e3f4a5b';
const MALFORMED_IDS = ['not-a-uuid', '12345', '6f1c2b8e-4d3a-4f5e-9a7b-0c1d2e3f4a5', "1' OR '1'='1"];

interface UserRow {
  id: string;
  username: string;
  password_hash: string;
  role: string;
  is_active: boolean;
}

describe('users (e2e)', () => {
  let t: TestApp;
  let admin: string;
  let adminId: string;

  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.adminToken();
    adminId = (await t.sql<{ id: string }>("SELECT id FROM users WHERE username = 'admin'"))[0].id;
  });
  afterAll(() => t.close());

  const auth = (token: string) => `Bearer ${token}`;
  const login = (username: string, password: string) =>
    t.http.post('/api/v1/auth/login').send({ username, password });
  const me = (token: string) => t.http.get('/api/v1/auth/me').set('Authorization', auth(token));
  const createUser = (body: unknown) =>
    t.http
      .post('/api/v1/users')
      .set('Authorization', auth(admin))
      .send(body as object);
  const updateUser = (id: string, body: unknown, token = admin) =>
    t.http
      .put(`/api/v1/users/${id}`)
      .set('Authorization', auth(token))
      .send(body as object);

  async function newUser(username: string, password: string, role: 'admin' | 'viewer' = 'viewer') {
    const res = await createUser({ username, password, role }).expect(201);
    return res.body.id as string;
  }
  async function tokenOf(username: string, password: string): Promise<string> {
    return (await login(username, password).expect(200)).body.access_token as string;
  }
  async function rows(): Promise<UserRow[]> {
    return t.sql<UserRow>('SELECT id, username, password_hash, role, is_active FROM users ORDER BY id');
  }
  async function row(id: string): Promise<UserRow | undefined> {
    return (
      await t.sql<UserRow>('SELECT id, username, password_hash, role, is_active FROM users WHERE id = $1', [
        id,
      ])
    )[0];
  }

  describe('GET /users', () => {
    it('lists every user with the documented fields and never a password hash', async () => {
      const viewerId = await newUser('lister', 'lister-password-1');
      const res = await t.http.get('/api/v1/users').set('Authorization', auth(admin)).expect(200);
      expect(Array.isArray(res.body)).toBe(true);
      const ids = res.body.map((u: { id: string }) => u.id);
      expect(ids).toEqual(expect.arrayContaining([adminId, viewerId]));
      expect(res.body).toHaveLength((await rows()).length);
      for (const user of res.body) expect(Object.keys(user).sort()).toEqual(USER_FIELDS);
      expect(res.body.find((u: { id: string }) => u.id === viewerId)).toMatchObject({
        username: 'lister',
        role: 'viewer',
        is_active: true,
        last_login_at: null,
      });
      expect(JSON.stringify(res.body)).not.toMatch(/password|\$2[aby]\$/);
    });
  });

  describe('POST /users', () => {
    it('creates a user (username stored lower-case and trimmed) who can then log in', async () => {
      const res = await createUser({
        username: '  New.User_1 ',
        password: 'new-user-password',
        role: 'viewer',
      }).expect(201);
      expect(Object.keys(res.body).sort()).toEqual(USER_FIELDS);
      expect(res.body).toMatchObject({
        username: 'new.user_1',
        role: 'viewer',
        is_active: true,
        last_login_at: null,
      });
      expect(JSON.stringify(res.body)).not.toMatch(/password/);

      const stored = await row(res.body.id);
      expect(stored?.username).toBe('new.user_1');
      // Stored as a bcrypt hash of the password, not the password itself.
      expect(stored?.password_hash).not.toContain('new-user-password');
      expect(await bcrypt.compare('new-user-password', stored!.password_hash)).toBe(true);

      const fetched = await t.http
        .get(`/api/v1/users/${res.body.id}`)
        .set('Authorization', auth(admin))
        .expect(200);
      expect(fetched.body).toEqual(res.body);

      const session = await login('NEW.USER_1', 'new-user-password').expect(200);
      expect(session.body.user.id).toBe(res.body.id);
      const after = await t.http
        .get(`/api/v1/users/${res.body.id}`)
        .set('Authorization', auth(admin))
        .expect(200);
      expect(after.body.last_login_at).not.toBeNull();
    });

    it('creates admins that have admin powers', async () => {
      await newUser('second-boss', 'second-boss-password', 'admin');
      const token = await tokenOf('second-boss', 'second-boss-password');
      await t.http.get('/api/v1/users').set('Authorization', auth(token)).expect(200);
      expect((await me(token).expect(200)).body.role).toBe('admin');
    });

    it('answers 409 for a username that exists in any letter case, and keeps the original', async () => {
      const id = await newUser('duplicate', 'original-password');
      const before = await rows();
      for (const username of ['duplicate', 'DUPLICATE', ' Duplicate ']) {
        const res = await createUser({ username, password: 'impostor-password', role: 'admin' }).expect(409);
        expect(res.body.status_code).toBe(409);
        expect(res.body.detail).toMatch(/already exists/);
      }
      expect(await rows()).toEqual(before);
      expect((await row(id))?.role).toBe('viewer');
      await login('duplicate', 'original-password').expect(200);
      await login('duplicate', 'impostor-password').expect(401);
    });

    it('accepts passwords of exactly 8 characters and exactly 72 bytes', async () => {
      await newUser('eight-chars', '12345678');
      await login('eight-chars', '12345678').expect(200);
      const multiByte72 = 'é'.repeat(36); // 36 characters, 72 bytes
      await newUser('multibyte', multiByte72);
      await login('multibyte', multiByte72).expect(200);
      await login('multibyte', 'é'.repeat(35)).expect(401);
      const ascii72 = 'p'.repeat(71) + 'q';
      await newUser('ascii-max', ascii72);
      await login('ascii-max', ascii72).expect(200);
      // Were the password truncated, a different 73rd byte would not matter; here 72 bytes is the whole password.
      await login('ascii-max', 'p'.repeat(72)).expect(401);
    });

    it('refuses invalid input with 422 naming the field, and creates nothing', async () => {
      const valid = { username: 'valid-name', password: 'valid-password', role: 'viewer' };
      const cases: { body: unknown; field: string }[] = [
        { body: { password: valid.password, role: 'viewer' }, field: 'body.username' },
        { body: { ...valid, username: 'ab' }, field: 'body.username' },
        { body: { ...valid, username: '   ab   ' }, field: 'body.username' },
        { body: { ...valid, username: 'a'.repeat(65) }, field: 'body.username' },
        { body: { ...valid, username: 'two words' }, field: 'body.username' },
        { body: { ...valid, username: 'böb-user' }, field: 'body.username' },
        { body: { ...valid, username: 'x/../admin' }, field: 'body.username' },
        { body: { ...valid, username: 12345 }, field: 'body.username' },
        { body: { ...valid, username: null }, field: 'body.username' },
        { body: { username: 'valid-name', role: 'viewer' }, field: 'body.password' },
        { body: { ...valid, password: 'seven77' }, field: 'body.password' },
        { body: { ...valid, password: 'p'.repeat(73) }, field: 'body.password' },
        { body: { ...valid, password: 'é'.repeat(37) }, field: 'body.password' },
        { body: { ...valid, password: 123456789 }, field: 'body.password' },
        { body: { ...valid, password: null }, field: 'body.password' },
        { body: { username: 'valid-name', password: 'valid-password' }, field: 'body.role' },
        { body: { ...valid, role: 'superuser' }, field: 'body.role' },
        { body: { ...valid, role: 'Admin' }, field: 'body.role' },
        { body: { ...valid, role: ['admin'] }, field: 'body.role' },
        { body: { ...valid, is_admin: true }, field: 'body.is_admin' },
        { body: { ...valid, password_hash: '$2b$04$abcdefghijklmnopqrstuv' }, field: 'body.password_hash' },
        { body: [valid], field: 'body' },
      ];
      const before = await rows();
      for (const { body, field } of cases) {
        const res = await createUser(body).expect(422);
        expect(res.body.status_code).toBe(422);
        expect(res.body.detail).toMatch(/^Request validation failed/);
        expect({ body, fields: res.body.errors.map((e: { field: string }) => e.field) }).toEqual({
          body,
          fields: expect.arrayContaining([field]),
        });
      }
      const malformed = await t.http
        .post('/api/v1/users')
        .set('Authorization', auth(admin))
        .set('Content-Type', 'application/json')
        .send('{"username": "valid-name", "password": "valid-password", "role": "viewer"')
        .expect(400);
      expect(malformed.body).toEqual({ detail: 'Malformed JSON in request body', status_code: 400 });
      await t.http
        .post('/api/v1/users')
        .set('Authorization', auth(admin))
        .set('Content-Type', 'text/plain')
        .send('username=valid-name')
        .expect(415);

      expect(await rows()).toEqual(before);
      await login('valid-name', 'valid-password').expect(401);
    });
  });

  describe('GET /users/{id}', () => {
    it('answers 404 for unknown and malformed ids', async () => {
      const res = await t.http
        .get(`/api/v1/users/${UNKNOWN_ID}`)
        .set('Authorization', auth(admin))
        .expect(404);
      expect(res.body).toEqual({ detail: 'User not found', status_code: 404 });
      for (const id of MALFORMED_IDS) {
        const bad = await t.http
          .get(`/api/v1/users/${encodeURIComponent(id)}`)
          .set('Authorization', auth(admin))
          .expect(404);
        expect(bad.body.status_code).toBe(404);
      }
      // An upper-case spelling of a real id names the same user.
      const upper = await t.http
        .get(`/api/v1/users/${adminId.toUpperCase()}`)
        .set('Authorization', auth(admin))
        .expect(200);
      expect(upper.body.id).toBe(adminId);
    });
  });

  describe('PUT /users/{id}', () => {
    it("changes the role, and the user's existing session gets the new role's permissions at once", async () => {
      const id = await newUser('promoted', 'promoted-password');
      const token = await tokenOf('promoted', 'promoted-password');
      await t.http.get('/api/v1/users').set('Authorization', auth(token)).expect(403);

      const res = await updateUser(id, { role: 'admin' }).expect(200);
      expect(Object.keys(res.body).sort()).toEqual(USER_FIELDS);
      expect(res.body).toMatchObject({ id, username: 'promoted', role: 'admin', is_active: true });
      expect((await row(id))?.role).toBe('admin');
      // A role change alone does not end sessions.
      await t.http.get('/api/v1/users').set('Authorization', auth(token)).expect(200);

      await updateUser(id, { role: 'viewer' }).expect(200);
      const denied = await t.http.get('/api/v1/users').set('Authorization', auth(token)).expect(403);
      expect(denied.body.detail).toBe('Insufficient permissions. Required scope: admin');
    });

    it("sets a new password: the user's sessions end, the old password stops working, the new one works", async () => {
      const id = await newUser('reset-me', 'old-password-1');
      const session1 = await tokenOf('reset-me', 'old-password-1');
      const session2 = await tokenOf('reset-me', 'old-password-1');
      const hashBefore = (await row(id))?.password_hash;

      const res = await updateUser(id, { password: 'new-password-2' }).expect(200);
      expect(JSON.stringify(res.body)).not.toMatch(/password/);
      expect((await row(id))?.password_hash).not.toBe(hashBefore);

      for (const token of [session1, session2]) {
        const dead = await me(token).expect(401);
        expect(dead.body.detail).toBe('Invalid or expired token');
      }
      await login('reset-me', 'old-password-1').expect(401);
      await login('reset-me', 'new-password-2').expect(200);
      // The admin who made the change keeps their session.
      await me(admin).expect(200);
    });

    it('deactivates a user (sessions end, login refused) and reactivates them', async () => {
      const id = await newUser('suspended', 'suspended-password');
      const token = await tokenOf('suspended', 'suspended-password');

      const off = await updateUser(id, { is_active: false }).expect(200);
      expect(off.body.is_active).toBe(false);
      expect((await row(id))?.is_active).toBe(false);
      await me(token).expect(401);
      const refused = await login('suspended', 'suspended-password').expect(401);
      expect(refused.body).toEqual({ detail: 'Invalid credentials', status_code: 401 });
      const listed = await t.http.get('/api/v1/users').set('Authorization', auth(admin)).expect(200);
      expect(listed.body.find((u: { id: string }) => u.id === id).is_active).toBe(false);

      const on = await updateUser(id, { is_active: true }).expect(200);
      expect(on.body.is_active).toBe(true);
      // The old session stays ended; a new login works.
      await me(token).expect(401);
      const fresh = await tokenOf('suspended', 'suspended-password');
      await me(fresh).expect(200);
    });

    it('leaves everything as it was for an empty update', async () => {
      const id = await newUser('untouched', 'untouched-password');
      const token = await tokenOf('untouched', 'untouched-password');
      const before = await row(id);
      const res = await updateUser(id, {}).expect(200);
      expect(res.body).toMatchObject({ id, username: 'untouched', role: 'viewer', is_active: true });
      expect(await row(id)).toEqual(before);
      await me(token).expect(200);
    });

    it('refuses invalid input with 422 and changes nothing', async () => {
      const id = await newUser('steady', 'steady-password');
      const token = await tokenOf('steady', 'steady-password');
      const cases: { body: unknown; field: string }[] = [
        { body: { role: 'root' }, field: 'body.role' },
        { body: { role: 1 }, field: 'body.role' },
        { body: { role: null }, field: 'body.role' },
        { body: { is_active: 'no' }, field: 'body.is_active' },
        { body: { is_active: 0 }, field: 'body.is_active' },
        { body: { is_active: null }, field: 'body.is_active' },
        { body: { password: 'short' }, field: 'body.password' },
        { body: { password: 'p'.repeat(73) }, field: 'body.password' },
        { body: { password: 12345678 }, field: 'body.password' },
        { body: { password: null }, field: 'body.password' },
        { body: { username: 'renamed' }, field: 'body.username' },
        { body: { role: 'admin', id: UNKNOWN_ID }, field: 'body.id' },
        { body: ['viewer'], field: 'body' },
      ];
      const before = await row(id);
      for (const { body, field } of cases) {
        const res = await updateUser(id, body);
        expect({ body, status: res.status }).toEqual({ body, status: 422 });
        expect({ body, fields: res.body.errors.map((e: { field: string }) => e.field) }).toEqual({
          body,
          fields: expect.arrayContaining([field]),
        });
      }
      await t.http
        .put(`/api/v1/users/${id}`)
        .set('Authorization', auth(admin))
        .set('Content-Type', 'application/json')
        .send('{"role": "admin"')
        .expect(400);
      expect(await row(id)).toEqual(before);
      await me(token).expect(200);
      await login('steady', 'steady-password').expect(200);
    });

    it('answers 404 for unknown and malformed ids', async () => {
      const before = await rows();
      const res = await updateUser(UNKNOWN_ID, { role: 'admin' }).expect(404);
      expect(res.body).toEqual({ detail: 'User not found', status_code: 404 });
      for (const id of MALFORMED_IDS) await updateUser(encodeURIComponent(id), { role: 'admin' }).expect(404);
      expect(await rows()).toEqual(before);
    });
  });

  describe('DELETE /users/{id}', () => {
    it('deletes the user: their tokens stop working, they cannot log in, and they are gone from the API', async () => {
      const id = await newUser('leaver', 'leaver-password');
      const token = await tokenOf('leaver', 'leaver-password');
      await me(token).expect(200);

      await t.http.delete(`/api/v1/users/${id}`).set('Authorization', auth(admin)).expect(204);

      const dead = await me(token).expect(401);
      expect(dead.body.detail).toBe('Invalid or expired token');
      await login('leaver', 'leaver-password').expect(401);
      await t.http.get(`/api/v1/users/${id}`).set('Authorization', auth(admin)).expect(404);
      const list = await t.http.get('/api/v1/users').set('Authorization', auth(admin)).expect(200);
      expect(list.body.map((u: { id: string }) => u.id)).not.toContain(id);
      expect(await row(id)).toBeUndefined();
      expect(await t.sql('SELECT id FROM user_sessions WHERE user_id = $1', [id])).toEqual([]);
      // Deleting again: nothing to delete.
      await t.http.delete(`/api/v1/users/${id}`).set('Authorization', auth(admin)).expect(404);
      // The name is free again.
      await newUser('leaver', 'another-password');
    });

    it('answers 404 for unknown and malformed ids and deletes nothing', async () => {
      const before = await rows();
      const res = await t.http
        .delete(`/api/v1/users/${UNKNOWN_ID}`)
        .set('Authorization', auth(admin))
        .expect(404);
      expect(res.body).toEqual({ detail: 'User not found', status_code: 404 });
      for (const id of MALFORMED_IDS) {
        await t.http
          .delete(`/api/v1/users/${encodeURIComponent(id)}`)
          .set('Authorization', auth(admin))
          .expect(404);
      }
      expect(await rows()).toEqual(before);
    });
  });

  describe('the last active admin', () => {
    // Whatever a failing test here leaves behind, later tests need `admin` to be an active admin again.
    afterEach(async () => {
      await t.sql("UPDATE users SET role = 'admin', is_active = true WHERE id = $1", [adminId]);
    });

    /** Ensures `admin` is the only active admin (other admins from earlier tests are demoted). */
    async function onlyAdminLeft() {
      for (const other of await rows()) {
        if (other.id !== adminId && other.role === 'admin' && other.is_active) {
          await updateUser(other.id, { role: 'viewer' }).expect(200);
        }
      }
    }

    it('cannot be deleted, demoted or deactivated (400), and stays an admin', async () => {
      await onlyAdminLeft();
      const expected = {
        detail: 'The last active admin cannot be removed, demoted or deactivated',
        status_code: 400,
      };
      const del = await t.http
        .delete(`/api/v1/users/${adminId}`)
        .set('Authorization', auth(admin))
        .expect(400);
      expect(del.body).toEqual(expected);
      expect((await updateUser(adminId, { role: 'viewer' }).expect(400)).body).toEqual(expected);
      expect((await updateUser(adminId, { is_active: false }).expect(400)).body).toEqual(expected);
      expect((await updateUser(adminId, { role: 'viewer', is_active: false }).expect(400)).body).toEqual(
        expected,
      );
      // A refused update changes none of its fields, not even the allowed ones.
      await updateUser(adminId, { role: 'viewer', password: 'sneaky-new-password' }).expect(400);

      expect(await row(adminId)).toMatchObject({ role: 'admin', is_active: true });
      await me(admin).expect(200);
      await login('admin', ADMIN_PASSWORD).expect(200);
      await login('admin', 'sneaky-new-password').expect(401);
      // Updates that keep it an active admin are fine.
      await updateUser(adminId, { role: 'admin', is_active: true }).expect(200);
    });

    it('does not count inactive admins as another admin', async () => {
      await onlyAdminLeft();
      const dormant = await newUser('dormant-admin', 'dormant-password', 'admin');
      await updateUser(dormant, { is_active: false }).expect(200);
      await updateUser(adminId, { role: 'viewer' }).expect(400);
      await t.http.delete(`/api/v1/users/${adminId}`).set('Authorization', auth(admin)).expect(400);
      expect(await row(adminId)).toMatchObject({ role: 'admin', is_active: true });
      // An inactive admin can itself be deleted.
      await t.http.delete(`/api/v1/users/${dormant}`).set('Authorization', auth(admin)).expect(204);
    });

    it('can step down or be deleted once another active admin exists', async () => {
      await onlyAdminLeft();
      const deputyId = await newUser('deputy', 'deputy-password', 'admin');
      const deputy = await tokenOf('deputy', 'deputy-password');

      await updateUser(adminId, { role: 'viewer' }).expect(200);
      await t.http.get('/api/v1/users').set('Authorization', auth(admin)).expect(403);
      // Now the deputy is the last admin.
      await updateUser(deputyId, { role: 'viewer' }, deputy).expect(400);
      await updateUser(adminId, { role: 'admin' }, deputy).expect(200);
      await t.http.get('/api/v1/users').set('Authorization', auth(admin)).expect(200);

      // An admin may delete another admin, and itself when it is not the last.
      await t.http.delete(`/api/v1/users/${deputyId}`).set('Authorization', auth(deputy)).expect(204);
      await me(deputy).expect(401);
      expect(await row(deputyId)).toBeUndefined();
      expect(await row(adminId)).toMatchObject({ role: 'admin', is_active: true });
    });

    it('survives two admins demoting each other at the same time: exactly one stays admin, no errors', async () => {
      for (let round = 0; round < 5; round++) {
        await onlyAdminLeft();
        const otherId = await newUser(`rival-${round}`, 'rival-password', 'admin');
        const other = await tokenOf(`rival-${round}`, 'rival-password');

        const [a, b] = await Promise.all([
          updateUser(adminId, { role: 'viewer' }, other),
          updateUser(otherId, { role: 'viewer' }, admin),
        ]);
        // One wins. The other is refused: 400 (it would leave no admin), or 403 when the winner
        // committed before the loser's request was even authorized (its caller is no longer an admin).
        const statuses = [a.status, b.status].sort();
        expect(statuses[0]).toBe(200);
        expect([400, 403]).toContain(statuses[1]);
        const admins = (await rows()).filter((u) => u.role === 'admin' && u.is_active);
        expect(admins).toHaveLength(1);

        // Put `admin` back in charge for the next round.
        if (admins[0].id !== adminId) await updateUser(adminId, { role: 'admin' }, other).expect(200);
        await t.http.delete(`/api/v1/users/${otherId}`).set('Authorization', auth(admin)).expect(204);
      }
    });

    it('survives two admins deleting each other at the same time: exactly one remains, no errors', async () => {
      for (let round = 0; round < 5; round++) {
        await onlyAdminLeft();
        const firstId = await newUser(`duel-one-${round}`, 'duel-password', 'admin');
        const secondId = await newUser(`duel-two-${round}`, 'duel-password', 'admin');
        await updateUser(adminId, { role: 'viewer' }).expect(200);
        const first = await tokenOf(`duel-one-${round}`, 'duel-password');
        const second = await tokenOf(`duel-two-${round}`, 'duel-password');

        const [a, b] = await Promise.all([
          t.http.delete(`/api/v1/users/${secondId}`).set('Authorization', auth(first)),
          t.http.delete(`/api/v1/users/${firstId}`).set('Authorization', auth(second)),
        ]);
        // One wins. The other is refused: 400 (it would leave no admin), or 401 when the winner
        // committed before the loser's request was even authenticated (its caller no longer exists).
        const statuses = [a.status, b.status].sort();
        expect(statuses[0]).toBe(204);
        expect([400, 401]).toContain(statuses[1]);
        const admins = (await rows()).filter((u) => u.role === 'admin' && u.is_active);
        expect(admins).toHaveLength(1);
        expect([firstId, secondId]).toContain(admins[0].id);

        const survivor = admins[0].id === firstId ? first : second;
        await updateUser(adminId, { role: 'admin' }, survivor).expect(200);
        await t.http.delete(`/api/v1/users/${admins[0].id}`).set('Authorization', auth(admin)).expect(204);
      }
    });
  });

  describe('access', () => {
    it('refuses callers without credentials (401) and non-admins (403) on every /users route', async () => {
      const targetId = await newUser('target', 'target-password');
      await newUser('peeker', 'peeker-password');
      const viewer = await tokenOf('peeker', 'peeker-password');
      const { key: readKey } = await t.createApiKey({
        name: 'read-only',
        scopes: ['read:events', 'read:cameras'],
      });
      const before = await rows();

      const routes = [
        () => t.http.get('/api/v1/users'),
        () =>
          t.http
            .post('/api/v1/users')
            .send({ username: 'intruder', password: 'intruder-pass', role: 'admin' }),
        () => t.http.get(`/api/v1/users/${targetId}`),
        () => t.http.put(`/api/v1/users/${targetId}`).send({ role: 'admin' }),
        () => t.http.delete(`/api/v1/users/${targetId}`),
      ];
      for (const route of routes) {
        expect((await route().expect(401)).body).toEqual({ detail: 'Not authenticated', status_code: 401 });
        const forbidden = { detail: 'Insufficient permissions. Required scope: admin', status_code: 403 };
        expect((await route().set('Authorization', auth(viewer)).expect(403)).body).toEqual(forbidden);
        expect((await route().set('X-API-Key', readKey).expect(403)).body).toEqual(forbidden);
      }
      expect(await rows()).toEqual(before);
    });

    it('lets an admin-scoped API key manage users', async () => {
      const { key } = await t.createApiKey({ name: 'provisioning', scopes: ['admin'] });
      const res = await t.http
        .post('/api/v1/users')
        .set('X-API-Key', key)
        .send({ username: 'provisioned', password: 'provisioned-pass', role: 'viewer' })
        .expect(201);
      await t.http.get(`/api/v1/users/${res.body.id}`).set('X-API-Key', key).expect(200);
      await t.http.delete(`/api/v1/users/${res.body.id}`).set('X-API-Key', key).expect(204);
      expect(await row(res.body.id)).toBeUndefined();
    });
  });
});
