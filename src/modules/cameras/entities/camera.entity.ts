import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { DETECTION_TYPES, type DetectionType } from '../../events/entities/event.entity';

export const CAMERA_SOURCE_TYPES = ['rtsp', 'usb', 'protect', 'mjpeg'] as const;
export type CameraSourceType = (typeof CAMERA_SOURCE_TYPES)[number];

export const CAMERA_STATUSES = [
  'stopped',
  'starting',
  'running',
  'reconnecting',
  'offline',
  'error',
] as const;
export type CameraStatus = (typeof CAMERA_STATUSES)[number];

export const MOTION_SENSITIVITIES = ['low', 'medium', 'high'] as const;
export type MotionSensitivity = (typeof MOTION_SENSITIVITIES)[number];

/** A polygon in 0..1 image coordinates; motion outside every enabled zone is ignored. */
export interface DetectionZone {
  name: string;
  enabled: boolean;
  points: [number, number][];
}

@Entity('cameras')
export class CameraEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Index('cameras_name_key', { unique: true })
  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({ name: 'source_type', type: 'enum', enum: CAMERA_SOURCE_TYPES, enumName: 'camera_source_type' })
  sourceType: CameraSourceType;

  /** Stream URL (rtsp/rtsps for rtsp, http(s) for mjpeg); never contains credentials. */
  @Column({ type: 'text', nullable: true })
  url: string | null;

  @Column({ type: 'varchar', length: 200, nullable: true })
  username: string | null;

  /** AES-256-GCM ciphertext (see common/crypto); never returned. */
  @Column({ name: 'password_encrypted', type: 'text', nullable: true })
  passwordEncrypted: string | null;

  /** usb: /dev/videoN */
  @Column({ type: 'varchar', length: 200, nullable: true })
  device: string | null;

  @Index('cameras_protect_controller_id_idx')
  @Column({ name: 'protect_controller_id', type: 'uuid', nullable: true })
  protectControllerId: string | null;

  @Column({ name: 'protect_camera_id', type: 'varchar', length: 100, nullable: true })
  protectCameraId: string | null;

  @Column({ type: 'boolean', default: false })
  enabled: boolean;

  @Column({ type: 'enum', enum: CAMERA_STATUSES, enumName: 'camera_status', default: 'stopped' })
  status: CameraStatus;

  @Column({ name: 'status_message', type: 'text', nullable: true })
  statusMessage: string | null;

  @Column({ name: 'frame_rate', type: 'smallint', default: 5 })
  frameRate: number;

  @Column({
    name: 'motion_sensitivity',
    type: 'enum',
    enum: MOTION_SENSITIVITIES,
    enumName: 'motion_sensitivity',
    default: 'medium',
  })
  motionSensitivity: MotionSensitivity;

  @Column({ name: 'motion_cooldown_seconds', type: 'integer', default: 30 })
  motionCooldownSeconds: number;

  @Column({ name: 'detection_zones', type: 'jsonb', default: () => "'[]'" })
  detectionZones: DetectionZone[];

  /** Which detection types make events. */
  @Column({
    name: 'detection_types',
    type: 'text',
    array: true,
    default: () => `'{${DETECTION_TYPES.join(',')}}'`,
  })
  detectionTypes: DetectionType[];

  @Column({ name: 'prompt_override', type: 'text', nullable: true })
  promptOverride: string | null;

  @Column({ name: 'last_frame_at', type: 'timestamptz', nullable: true })
  lastFrameAt: Date | null;

  @Column({ name: 'last_event_at', type: 'timestamptz', nullable: true })
  lastEventAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
