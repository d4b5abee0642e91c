import { ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';

/** bcrypt reads at most 72 bytes: longer passwords would be silently truncated, so refuse them. */
@ValidatorConstraint({ name: 'passwordBytes' })
export class PasswordBytesConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    if (typeof value !== 'string') return false;
    const bytes = Buffer.byteLength(value, 'utf8');
    return value.length >= 8 && bytes <= 72;
  }

  defaultMessage(): string {
    return 'password must be at least 8 characters and at most 72 bytes';
  }
}
