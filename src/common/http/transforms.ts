/** class-transformer helpers shared by the request DTOs. */

/** Query strings carry booleans as text: accept true/false/1/0; anything else fails validation. */
export function toBoolean({ value }: { value: unknown }): unknown {
  if (value === 'true' || value === '1' || value === true) return true;
  if (value === 'false' || value === '0' || value === false) return false;
  return value;
}

export function trimString({ value }: { value: unknown }): unknown {
  return typeof value === 'string' ? value.trim() : value;
}

/** A nullable datetime as the API writes it: ISO 8601 UTC with `Z`, or null (decisions.md §1). */
export function isoOrNull(date: Date | null): string | null {
  return date ? date.toISOString() : null;
}
