import { Injectable, PipeTransform } from '@nestjs/common';
import { NotFoundError } from '../errors/app-errors';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path id that is not a UUID cannot name anything: 404, like an unknown one (decisions.md §1). */
@Injectable()
export class UuidParamPipe implements PipeTransform<string, string> {
  constructor(private readonly resource: string) {}

  transform(value: string): string {
    if (!UUID.test(value)) throw new NotFoundError(this.resource);
    return value.toLowerCase();
  }
}
