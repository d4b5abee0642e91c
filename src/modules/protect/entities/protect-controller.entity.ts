import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export const CONTROLLER_STATUSES = ['connecting', 'connected', 'disconnected', 'error'] as const;
export type ControllerStatus = (typeof CONTROLLER_STATUSES)[number];

/** A UniFi Protect console Vigil connects to (decisions.md §4, Protect controller). */
@Entity('protect_controllers')
export class ProtectControllerEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Index('protect_controllers_name_key', { unique: true })
  @Column({ type: 'varchar', length: 100 })
  name: string;

  /** Host name or IP address of the console (no scheme, no port). */
  @Column({ type: 'varchar', length: 255 })
  host: string;

  @Column({ type: 'integer', default: 443 })
  port: number;

  @Column({ type: 'varchar', length: 200 })
  username: string;

  /** AES-256-GCM ciphertext (see common/crypto); never returned. */
  @Column({ name: 'password_encrypted', type: 'text' })
  passwordEncrypted: string;

  @Column({ name: 'verify_tls', type: 'boolean', default: false })
  verifyTls: boolean;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  @Column({
    type: 'enum',
    enum: CONTROLLER_STATUSES,
    enumName: 'protect_controller_status',
    default: 'disconnected',
  })
  status: ControllerStatus;

  @Column({ name: 'status_message', type: 'text', nullable: true })
  statusMessage: string | null;

  @Column({ name: 'console_name', type: 'varchar', length: 200, nullable: true })
  consoleName: string | null;

  @Column({ type: 'varchar', length: 50, nullable: true })
  version: string | null;

  @Column({ name: 'camera_count', type: 'integer', nullable: true })
  cameraCount: number | null;

  @Column({ name: 'last_connected_at', type: 'timestamptz', nullable: true })
  lastConnectedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
