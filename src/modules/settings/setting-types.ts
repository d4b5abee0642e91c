import type { Type } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptions } from '@nestjs/swagger';
import type { FieldError } from '../../common/errors/app-errors';

/**
 * The value types of the settings registry. One type describes everything about a value: how a PUT value
 * is validated and applied onto the current one, how it is presented (secrets masked), how it is stored
 * (only what differs from the default; secrets encrypted), how a stored value is read back, and its
 * OpenAPI schema.
 */

/** What GET answers in place of a stored secret; a PUT that sends it back keeps the stored secret. */
export const SECRET_MASK = '********';

export interface SecretCodec {
  encrypt(plaintext: string): string;
  decrypt(stored: string): string;
}

/** Reports a stored value that cannot be used (it falls back to the default). */
export type Warn = (path: string, reason: string) => void;

/** `read`: the GET/PUT response schema (every field present). `write`: the PUT body (every field optional). */
export type DocMode = 'read' | 'write';

/**
 * Equality of JSON values (key order ignored). Not util.isDeepStrictEqual: that also compares prototypes,
 * which differ between realms (structuredClone under Jest).
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every(
    (k) =>
      Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}

/** A deep copy of a JSON value. */
export const cloneJson = <T>(value: T): T =>
  value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The last segment of a field path (`body.ai_providers.openai.model` -> `model`), as messages name it. */
const nameOf = (path: string) => path.slice(path.lastIndexOf('.') + 1);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnySettingType = SettingType<any>;

export abstract class SettingType<T> {
  /** True when the value is or contains a secret (write-only, encrypted at rest, masked on read). */
  readonly secret: boolean = false;

  abstract doc(mode: DocMode): ApiPropertyOptions;

  /**
   * Applies a PUT value onto `current` and returns the new value. Problems are pushed onto `errors`
   * (field = `path`); the return value is then meaningless.
   */
  abstract apply(input: unknown, current: T, path: string, errors: FieldError[]): T;

  /** The value as responses show it. */
  present(value: T): unknown {
    return value;
  }

  /** The JSON to store for `value`: only what differs from `def`; `undefined` when nothing does. */
  store(value: T, def: T, _codec: SecretCodec): unknown {
    return jsonEqual(value, def) ? undefined : value;
  }

  /** Reads a stored JSON value; what is not valid falls back to `def` (and is reported). */
  load(stored: unknown, def: T, _codec: SecretCodec, path: string, warn: Warn): T {
    const errors: FieldError[] = [];
    const value = this.apply(stored, def, path, errors);
    if (errors.length > 0) {
      warn(path, errors[0].message);
      return def;
    }
    return value;
  }
}

class BooleanType extends SettingType<boolean> {
  constructor(private readonly description: string) {
    super();
  }
  doc(): ApiPropertyOptions {
    return { type: Boolean, description: this.description };
  }
  apply(input: unknown, current: boolean, path: string, errors: FieldError[]): boolean {
    if (typeof input !== 'boolean')
      errors.push({ field: path, message: `${nameOf(path)} must be true or false` });
    return input as boolean;
  }
}

interface NumberOptions {
  description: string;
  min: number;
  max: number;
  integer?: boolean;
  example?: number;
}

class NumberType extends SettingType<number> {
  constructor(private readonly options: NumberOptions) {
    super();
  }
  doc(): ApiPropertyOptions {
    const { description, min, max, integer, example } = this.options;
    return {
      type: integer ? 'integer' : Number,
      description,
      minimum: min,
      maximum: max,
      example,
    };
  }
  apply(input: unknown, current: number, path: string, errors: FieldError[]): number {
    const { min, max, integer } = this.options;
    const ok =
      typeof input === 'number' &&
      Number.isFinite(input) &&
      (!integer || Number.isInteger(input)) &&
      input >= min &&
      input <= max;
    if (!ok) {
      errors.push({
        field: path,
        message: `${nameOf(path)} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`,
      });
    }
    return input as number;
  }
}

interface TextOptions {
  description: string;
  minLength?: number;
  maxLength: number;
  /** Allow line breaks and tabs (prompts); other control characters are always refused. */
  multiline?: boolean;
  example?: string;
  /** Further validation: returns a message, or null when fine. May normalise by returning `{ value }`. */
  check?: (value: string) => string | { value: string } | null;
  format?: string;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
// eslint-disable-next-line no-control-regex
const CONTROL_BUT_WHITESPACE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

class TextType extends SettingType<string> {
  constructor(private readonly options: TextOptions) {
    super();
  }
  doc(): ApiPropertyOptions {
    const { description, minLength, maxLength, example, format } = this.options;
    return { type: String, description, minLength, maxLength, example, format };
  }
  apply(input: unknown, current: string, path: string, errors: FieldError[]): string {
    const name = nameOf(path);
    const { minLength = 0, maxLength, multiline, check } = this.options;
    if (typeof input !== 'string') {
      errors.push({ field: path, message: `${name} must be a string` });
      return input as string;
    }
    if (input.length < minLength || input.length > maxLength || (minLength > 0 && input.trim() === '')) {
      errors.push({
        field: path,
        message:
          minLength > 0
            ? `${name} must be ${minLength} to ${maxLength} characters long and not blank`
            : `${name} must be at most ${maxLength} characters long`,
      });
      return input;
    }
    if ((multiline ? CONTROL_BUT_WHITESPACE : CONTROL).test(input)) {
      errors.push({ field: path, message: `${name} must not contain control characters` });
      return input;
    }
    const problem = check?.(input) ?? null;
    if (typeof problem === 'string') {
      errors.push({ field: path, message: `${name} ${problem}` });
      return input;
    }
    return problem ? problem.value : input;
  }
}

class NullableType<T> extends SettingType<T | null> {
  override readonly secret: boolean;
  constructor(
    private readonly inner: SettingType<T>,
    private readonly nullMeans: string,
  ) {
    super();
    this.secret = inner.secret;
  }
  doc(mode: DocMode): ApiPropertyOptions {
    const inner = this.inner.doc(mode);
    return {
      ...inner,
      nullable: true,
      description: `${inner.description ?? ''} null: ${this.nullMeans}.`.trim(),
    };
  }
  apply(input: unknown, current: T | null, path: string, errors: FieldError[]): T | null {
    if (input === null) return null;
    const message = errors.length;
    const value = this.inner.apply(input, current as T, path, errors);
    // Say that null is allowed too: "... or null".
    for (let i = message; i < errors.length; i += 1) errors[i].message += ', or null';
    return value;
  }
}

class DistinctListType<V extends string> extends SettingType<V[]> {
  constructor(
    private readonly values: readonly V[],
    private readonly description: string,
  ) {
    super();
  }
  doc(): ApiPropertyOptions {
    return {
      type: String,
      isArray: true,
      enum: [...this.values],
      uniqueItems: true,
      maxItems: this.values.length,
      description: this.description,
    };
  }
  apply(input: unknown, current: V[], path: string, errors: FieldError[]): V[] {
    const name = nameOf(path);
    if (!Array.isArray(input)) {
      errors.push({ field: path, message: `${name} must be an array` });
      return input as V[];
    }
    input.forEach((item, i) => {
      if (!this.values.includes(item as V)) {
        errors.push({
          field: `${path}.${i}`,
          message: `each value in ${name} must be one of: ${this.values.join(', ')}`,
        });
      } else if (input.indexOf(item) !== i) {
        errors.push({ field: `${path}.${i}`, message: `${name} must not list "${String(item)}" twice` });
      }
    });
    return [...input] as V[];
  }
}

/**
 * A write-only string (an API key). Stored encrypted; presented as SECRET_MASK (or null when unset).
 * A PUT value of SECRET_MASK keeps the stored secret; null or "" removes it.
 */
class SecretType extends SettingType<string | null> {
  override readonly secret = true;
  constructor(
    private readonly description: string,
    private readonly maxLength: number,
  ) {
    super();
  }
  doc(mode: DocMode): ApiPropertyOptions {
    return mode === 'read'
      ? {
          type: String,
          nullable: true,
          description: `${this.description} Write-only: "${SECRET_MASK}" when set, null when not.`,
          example: SECRET_MASK,
        }
      : {
          type: String,
          nullable: true,
          maxLength: this.maxLength,
          format: 'password',
          description: `${this.description} Write-only. "${SECRET_MASK}" keeps the stored value; null or "" removes it.`,
          example: 'sk-...',
        };
  }
  apply(input: unknown, current: string | null, path: string, errors: FieldError[]): string | null {
    const name = nameOf(path);
    if (input === SECRET_MASK) return current;
    if (input === null || input === '') return null;
    if (typeof input !== 'string') {
      errors.push({ field: path, message: `${name} must be a string or null` });
    } else if (input.length > this.maxLength) {
      errors.push({ field: path, message: `${name} must be at most ${this.maxLength} characters long` });
    } else if (CONTROL.test(input) || input.trim() !== input) {
      errors.push({
        field: path,
        message: `${name} must not contain control characters or surrounding spaces`,
      });
    }
    return input as string;
  }
  override present(value: string | null): unknown {
    return value === null ? null : SECRET_MASK;
  }
  override store(value: string | null, def: string | null, codec: SecretCodec): unknown {
    if (value === def) return undefined;
    return value === null ? null : codec.encrypt(value);
  }
  override load(stored: unknown, def: string | null, codec: SecretCodec, path: string, warn: Warn) {
    if (stored === null) return null;
    if (typeof stored !== 'string') {
      warn(path, 'not an encrypted string');
      return def;
    }
    try {
      return codec.decrypt(stored);
    } catch {
      warn(path, 'cannot be decrypted (was ENCRYPTION_KEY changed?); treated as not set');
      return null;
    }
  }
}

type Fields = Record<string, AnySettingType>;
export type ValueOf<S> = S extends SettingType<infer V> ? V : never;
type ObjectValue<F extends Fields> = { [K in keyof F]: ValueOf<F[K]> };

/** A secret value itself (not an object that contains one): it gets an `x_set` flag. */
const isSecretLeaf = (field: AnySettingType) => field.secret && !(field instanceof ObjectType);

/** Suffix of the read-only flag that accompanies each secret field (`api_key` -> `api_key_set`). */
const SET_FLAG = '_set';

/**
 * A fixed set of named fields. A PUT may send any subset; the others keep their current values (deep
 * merge). Each secret field `x` is accompanied on read by a boolean `x_set`, which a PUT may send back
 * (it is ignored) so that a GET body can be PUT unchanged.
 */
class ObjectType<F extends Fields> extends SettingType<ObjectValue<F>> {
  override readonly secret: boolean;
  private readonly dtos = new Map<DocMode, Type<unknown>>();

  constructor(
    private readonly name: string,
    private readonly description: string,
    readonly fields: F,
  ) {
    super();
    this.secret = Object.values(fields).some((f) => f.secret);
  }

  doc(mode: DocMode): ApiPropertyOptions {
    return { type: () => this.dto(mode), description: this.description };
  }

  /** A class carrying the OpenAPI schema of this object (named `<name>Dto` or `<name>UpdateDto`). */
  private dto(mode: DocMode): Type<unknown> {
    let dto = this.dtos.get(mode);
    if (!dto) {
      const properties: Record<string, ApiPropertyOptions> = {};
      for (const [key, field] of Object.entries(this.fields)) {
        properties[key] = field.doc(mode);
        if (isSecretLeaf(field)) {
          properties[`${key}${SET_FLAG}`] = {
            type: Boolean,
            description:
              mode === 'read'
                ? `Whether \`${key}\` is set.`
                : `Read-only; accepted and ignored, so that a GET body can be sent back.`,
          };
        }
      }
      dto = schemaClass(
        mode === 'read' ? `${this.name}Dto` : `${this.name}UpdateDto`,
        properties,
        mode === 'read',
      );
      this.dtos.set(mode, dto);
    }
    return dto;
  }

  apply(input: unknown, current: ObjectValue<F>, path: string, errors: FieldError[]): ObjectValue<F> {
    if (!isPlainObject(input)) {
      errors.push({ field: path, message: `${nameOf(path)} must be an object` });
      return current;
    }
    const next = { ...current };
    for (const [key, value] of Object.entries(input)) {
      const field = this.fields[key] as AnySettingType | undefined;
      if (field && Object.hasOwn(this.fields, key)) {
        next[key as keyof F] = field.apply(value, current[key], `${path}.${key}`, errors) as ValueOf<
          F[keyof F]
        >;
        continue;
      }
      const flagOf = key.endsWith(SET_FLAG) ? key.slice(0, -SET_FLAG.length) : undefined;
      if (flagOf !== undefined && Object.hasOwn(this.fields, flagOf) && isSecretLeaf(this.fields[flagOf])) {
        if (typeof value !== 'boolean')
          errors.push({ field: `${path}.${key}`, message: `${key} must be true or false` });
        continue;
      }
      errors.push({
        field: `${path}.${key}`,
        message: `${key} is not a field of ${nameOf(path)} (known: ${Object.keys(this.fields).join(', ')})`,
      });
    }
    return next;
  }

  override present(value: ObjectValue<F>): unknown {
    const out: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(this.fields)) {
      out[key] = field.present(value[key]);
      if (isSecretLeaf(field)) out[`${key}${SET_FLAG}`] = value[key] !== null;
    }
    return out;
  }

  override store(value: ObjectValue<F>, def: ObjectValue<F>, codec: SecretCodec): unknown {
    const out: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(this.fields)) {
      const stored = field.store(value[key], def[key], codec);
      if (stored !== undefined) out[key] = stored;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }

  override load(stored: unknown, def: ObjectValue<F>, codec: SecretCodec, path: string, warn: Warn) {
    if (!isPlainObject(stored)) {
      warn(path, 'not an object');
      return def;
    }
    const out = { ...def };
    for (const [key, field] of Object.entries(this.fields)) {
      if (Object.hasOwn(stored, key)) {
        out[key as keyof F] = field.load(stored[key], def[key], codec, `${path}.${key}`, warn) as ValueOf<
          F[keyof F]
        >;
      }
    }
    return out;
  }
}

/** Creates a named class whose properties carry the given OpenAPI options (a schema in `components`). */
export function schemaClass(
  name: string,
  properties: Record<string, ApiPropertyOptions>,
  required: boolean,
): Type<unknown> {
  const cls = { [name]: class {} }[name];
  for (const [key, options] of Object.entries(properties)) {
    ApiProperty({ ...options, required } as ApiPropertyOptions)(cls.prototype, key);
  }
  return cls;
}

// The constructors the registry uses.
export const bool = (description: string) => new BooleanType(description);
export const integer = (options: Omit<NumberOptions, 'integer'>) =>
  new NumberType({ ...options, integer: true });
export const decimal = (options: Omit<NumberOptions, 'integer'>) => new NumberType(options);
export const text = (options: TextOptions) => new TextType(options);
export const nullable = <T>(inner: SettingType<T>, nullMeans: string) => new NullableType(inner, nullMeans);
export const distinctList = <V extends string>(values: readonly V[], description: string) =>
  new DistinctListType(values, description);
export const secret = (description: string, maxLength: number) => new SecretType(description, maxLength);
export const object = <F extends Fields>(name: string, description: string, fields: F) =>
  new ObjectType(name, description, fields);

/** An http(s) URL without credentials in it. */
export const httpUrl = (description: string, example: string) =>
  text({
    description,
    maxLength: 2048,
    minLength: 1,
    format: 'uri',
    example,
    check: (value) => {
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        return 'must be an http(s) URL';
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http(s) URL';
      if (url.username || url.password) return 'must not contain credentials (use api_key)';
      return null;
    },
  });

/** An IANA time zone name (checked with Intl); the case is normalised (`europe/berlin` -> `Europe/Berlin`). */
export const timeZone = (description: string, example: string) =>
  text({
    description,
    maxLength: 64,
    minLength: 1,
    example,
    check: (value) => {
      if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(value)) return 'must be an IANA time zone name';
      let resolved: string | undefined;
      try {
        resolved = new Intl.DateTimeFormat('en-US', { timeZone: value }).resolvedOptions().timeZone;
      } catch {
        return 'must be an IANA time zone name such as Europe/Berlin or UTC';
      }
      return { value: resolved && resolved.toLowerCase() === value.toLowerCase() ? resolved : value };
    },
  });
