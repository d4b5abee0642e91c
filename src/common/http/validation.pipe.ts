import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { FieldError, ValidationFailedError } from '../errors/app-errors';

function flatten(errors: ValidationError[], parent = ''): FieldError[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => ({ field, message }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

/**
 * The one global ValidationPipe: whitelist, refuse unknown fields, transform. Failures are 422 with
 * `errors: [{field: "body.name", message}]` (decisions.md §1).
 */
@Injectable()
export class AppValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      stopAtFirstError: true,
      transform: true,
      validationError: { target: false, value: false },
      exceptionFactory: (errors: ValidationError[]) => new ValidationFailedError(flatten(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body' && (value === null || typeof value !== 'object' || Array.isArray(value))) {
      if (metadata.metatype && this.toValidate(metadata)) {
        throw new ValidationFailedError([
          { field: 'body', message: 'the request body must be a JSON object' },
        ]);
      }
    }
    try {
      return await super.transform(value ?? (metadata.type === 'query' ? {} : value), metadata);
    } catch (error) {
      if (error instanceof ValidationFailedError) {
        const location = metadata.type === 'custom' ? 'body' : metadata.type;
        throw new ValidationFailedError(
          error.errors.map((e) => ({
            field: e.field ? `${location}.${e.field}` : location,
            message: e.message,
          })),
        );
      }
      throw error;
    }
  }
}
