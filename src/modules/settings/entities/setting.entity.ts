import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** One stored setting: its registry key and JSON value (secret parts encrypted). Defaults are not stored. */
@Entity('settings')
export class SettingEntity {
  @PrimaryColumn({ type: 'varchar', length: 100 })
  key: string;

  @Column({ type: 'jsonb' })
  value: unknown;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
