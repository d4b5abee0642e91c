import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
} from 'typeorm';
import { UserEntity } from '../../users/entities/user.entity';

export const API_KEY_SCOPES = ['read:events', 'read:cameras', 'write:cameras', 'admin'] as const;
export type Scope = (typeof API_KEY_SCOPES)[number];

const bigintAsNumber = { to: (v: number) => v, from: (v: string | null) => (v === null ? 0 : Number(v)) };

@Entity('api_keys')
@Index('api_keys_created_at_idx', ['createdAt'])
export class ApiKeyEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  /** `vgl_` plus the first 8 random characters: enough to recognise a key, useless to use it. */
  @Column({ type: 'varchar', length: 12 })
  prefix: string;

  /** Hex SHA-256 of the full key; the key itself is never stored. */
  @Index('api_keys_key_hash_key', { unique: true })
  @Column({ name: 'key_hash', type: 'char', length: 64 })
  keyHash: string;

  @Column({ type: 'text', array: true })
  scopes: string[];

  @Column({ name: 'is_active', type: 'boolean', default: true })
  isActive: boolean;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'rate_limit_per_minute', type: 'integer', default: 100 })
  rateLimitPerMinute: number;

  @Column({ name: 'usage_count', type: 'bigint', default: 0, transformer: bigintAsNumber })
  usageCount: number;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;

  @Column({ name: 'last_used_ip', type: 'varchar', length: 45, nullable: true })
  lastUsedIp: string | null;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @ManyToOne(() => UserEntity, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'created_by', foreignKeyConstraintName: 'api_keys_created_by_fkey' })
  creator?: UserEntity;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
