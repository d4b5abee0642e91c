import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { FieldError, ValidationFailedError } from '../../common/errors/app-errors';
import { SecretBox } from '../../common/crypto/secret-box';
import { DomainEventBus } from '../realtime/domain-event-bus';
import type { SettingsResponse } from './dto/settings.dto';
import { AnySettingType, cloneJson, jsonEqual, SecretCodec } from './setting-types';
import { isSettingKey, SETTING_KEYS, SettingKey, SETTINGS, SettingValues } from './settings.registry';

/** Read-only view of a cached value: the cache is shared, so callers must not change it. */
export type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

type Values = { [K in SettingKey]: DeepReadonly<SettingValues[K]> };

/** Serialises settings writes across instances (pg_advisory_xact_lock key). */
const WRITE_LOCK = 0x5e771265;

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

const typeOf = (key: SettingKey) => SETTINGS[key].type as AnySettingType;

/**
 * Reads and writes the settings of the registry. `get(key)` serves from an in-memory cache that every
 * instance drops when a `settings.changed` message arrives on the domain event bus, so changes apply
 * everywhere without a restart.
 */
@Injectable()
export class SettingsService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('SettingsService');
  private readonly codec: SecretCodec;
  private cache: Values | null = null;
  private loading: Promise<Values> | null = null;
  /** Bumped on every invalidation, so a load that started before a change is never cached. */
  private generation = 0;
  private readonly listeners = new Set<(keys: SettingKey[]) => void>();
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly bus: DomainEventBus,
    secretBox: SecretBox,
  ) {
    this.codec = { encrypt: (p) => secretBox.encrypt(p), decrypt: (s) => secretBox.decrypt(s) };
  }

  onModuleInit(): void {
    this.unsubscribe = this.bus.subscribe((message) => {
      if (message.type !== 'settings.changed') return;
      this.invalidate();
      const sent = (message.data as { keys?: unknown } | null)?.keys;
      // A message without a readable key list (another version, say) means "anything may have changed".
      const keys = Array.isArray(sent)
        ? sent.filter((k): k is SettingKey => typeof k === 'string' && isSettingKey(k))
        : SETTING_KEYS;
      for (const listener of this.listeners) {
        try {
          listener(keys);
        } catch (error) {
          this.logger.error({ msg: 'A settings listener failed', error: (error as Error).message });
        }
      }
    });
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  /** The current value of one setting (cached; secrets decrypted). Do not modify it: it is shared. */
  async get<K extends SettingKey>(key: K): Promise<Values[K]> {
    return (await this.values())[key];
  }

  /**
   * Calls `listener` with the changed keys after each change on any instance, once the cache has been
   * dropped (so `get` inside the listener sees the new values). Returns the unsubscribe function.
   */
  onChange(listener: (keys: SettingKey[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** GET /system/settings: every setting, defaults filled in, secrets masked. Read from the database. */
  async list(): Promise<SettingsResponse> {
    return this.present(await this.readAll(this.dataSource.manager));
  }

  /**
   * PUT /system/settings: a partial update. All values are validated first; when any fails, nothing is
   * stored (422 naming every bad field). Writes run in one transaction under a lock, on the values read
   * inside it, so concurrent partial updates on any instance merge instead of overwriting each other.
   */
  async update(body: unknown): Promise<SettingsResponse> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new ValidationFailedError([{ field: 'body', message: 'the request body must be a JSON object' }]);
    }
    const patch = body as Record<string, unknown>;
    const unknown: FieldError[] = Object.keys(patch)
      .filter((key) => !isSettingKey(key))
      .map((key) => ({
        field: `body.${key}`,
        message: `${key} is not a known setting (known: ${SETTING_KEYS.join(', ')})`,
      }));
    if (unknown.length > 0) throw new ValidationFailedError(unknown);

    const { values, changed } = await this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK]);
      const current = await this.readAll(manager);
      const next: Record<string, unknown> = { ...current };
      const errors: FieldError[] = [];
      for (const key of Object.keys(patch) as SettingKey[]) {
        next[key] = typeOf(key).apply(patch[key], cloneJson(current[key]), `body.${key}`, errors);
      }
      if (errors.length > 0) throw new ValidationFailedError(errors);
      const changedKeys = SETTING_KEYS.filter((key) => !jsonEqual(next[key], current[key]));
      for (const key of changedKeys) {
        const stored = typeOf(key).store(next[key], SETTINGS[key].default, this.codec);
        if (stored === undefined) {
          await manager.query('DELETE FROM settings WHERE key = $1', [key]);
        } else {
          await manager.query(
            `INSERT INTO settings (key, value, updated_at) VALUES ($1, $2::jsonb, now())
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
            [key, JSON.stringify(stored)],
          );
        }
      }
      return { values: next as Values, changed: changedKeys };
    });

    if (changed.length > 0) {
      // This instance sees its own change at once; the bus message (which reaches every instance,
      // this one included) drops the caches and tells the listeners.
      this.invalidate();
      this.bus.publish('settings.changed', { keys: changed });
      this.logger.log({ msg: 'Settings changed', keys: changed });
    }
    return this.present(values);
  }

  private invalidate(): void {
    this.generation += 1;
    this.cache = null;
    this.loading = null;
  }

  private values(): Promise<Values> {
    if (this.cache) return Promise.resolve(this.cache);
    if (!this.loading) {
      const generation = this.generation;
      const loading = this.readAll(this.dataSource.manager).then((values) => {
        deepFreeze(values);
        if (generation === this.generation) this.cache = values;
        return values;
      });
      loading
        .catch(() => undefined)
        .finally(() => {
          if (this.loading === loading) this.loading = null;
        });
      this.loading = loading;
    }
    return this.loading;
  }

  /** Every setting: stored value (validated; unusable parts fall back to the default) or the default. */
  private async readAll(manager: EntityManager): Promise<Values> {
    const rows: { key: string; value: unknown }[] = await manager.query('SELECT key, value FROM settings');
    const stored = new Map(rows.map((row) => [row.key, row.value]));
    const values: Record<string, unknown> = {};
    for (const key of SETTING_KEYS) {
      const def = cloneJson(SETTINGS[key].default);
      values[key] = stored.has(key)
        ? typeOf(key).load(stored.get(key), def, this.codec, key, (path, reason) =>
            this.logger.warn({
              msg: 'Ignoring an unusable stored setting; using the default',
              setting: path,
              reason,
            }),
          )
        : def;
    }
    return values as Values;
  }

  private present(values: Values): SettingsResponse {
    return Object.fromEntries(SETTING_KEYS.map((key) => [key, typeOf(key).present(values[key])]));
  }
}
