import type { ApiPropertyOptions } from '@nestjs/swagger';
import { schemaClass, SECRET_MASK } from '../setting-types';
import { SETTING_KEYS, SETTINGS } from '../settings.registry';

/**
 * The OpenAPI schemas of GET/PUT /system/settings, made from the registry so the documentation cannot
 * drift from what is validated: `SettingsResponseDto` is a flat object with every setting (defaults filled
 * in, secrets masked), `SettingsUpdateDto` the same keys, all optional.
 */
function properties(mode: 'read' | 'write'): Record<string, ApiPropertyOptions> {
  return Object.fromEntries(
    SETTING_KEYS.map((key) => {
      const { type, description } = SETTINGS[key];
      const doc = type.doc(mode);
      const def: unknown = SETTINGS[key].default;
      const objectValued = typeof def === 'object' && def !== null && !Array.isArray(def);
      const options: ApiPropertyOptions & { example?: unknown } = {
        ...doc,
        // An object's own schema describes it; other values add their type's note (range, null meaning).
        description: doc.description && !objectValued ? `${description} ${doc.description}` : description,
      };
      // Objects are documented by their own schema; other values show their default as the example.
      if (!objectValued && doc.example === undefined) options.example = type.present(def as never);
      return [key, options];
    }),
  );
}

/** Every setting with its current value (defaults filled in). Secret values read `"********"` or null. */
export const SettingsResponseDto = schemaClass('SettingsResponseDto', properties('read'), true);

/** A partial update: any subset of the settings; objects are merged field by field. */
export const SettingsUpdateDto = schemaClass('SettingsUpdateDto', properties('write'), false);

/** The JSON shape of SettingsResponseDto. */
export type SettingsResponse = Record<string, unknown>;

export { SECRET_MASK };
