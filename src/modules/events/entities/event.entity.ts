import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
} from 'typeorm';
import type { CameraEntity } from '../../cameras/entities/camera.entity';

export const DETECTION_TYPES = [
  'person',
  'vehicle',
  'animal',
  'package',
  'face',
  'license_plate',
  'motion',
  'ring',
  'unknown',
] as const;
export type DetectionType = (typeof DETECTION_TYPES)[number];

export const DESCRIPTION_STATUSES = ['pending', 'complete', 'failed'] as const;
export type DescriptionStatus = (typeof DESCRIPTION_STATUSES)[number];

/** Where an event came from: a camera's source type, or `api` for external ingestion (POST /events). */
export const EVENT_SOURCE_TYPES = ['rtsp', 'usb', 'protect', 'mjpeg', 'api'] as const;
export type EventSourceType = (typeof EVENT_SOURCE_TYPES)[number];

const numeric = { to: (v: number | null) => v, from: (v: string | null) => (v === null ? null : Number(v)) };

@Entity('events')
@Index('events_timestamp_id_idx', ['timestamp', 'id'])
@Index('events_camera_id_timestamp_idx', ['cameraId', 'timestamp'])
@Index('events_detection_type_timestamp_idx', ['detectionType', 'timestamp'])
@Index('events_source_type_timestamp_idx', ['sourceType', 'timestamp'])
@Index('events_confidence_idx', ['confidence'])
// Word search (`q`): a GIN index on description_tsv, written by hand in the migration (TypeORM cannot express
// a GIN index); `synchronize: false` keeps TypeORM from dropping it.
@Index('events_description_fts_idx', { synchronize: false })
export class EventEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'camera_id', type: 'uuid' })
  cameraId: string;

  @ManyToOne('CameraEntity', { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'camera_id', foreignKeyConstraintName: 'events_camera_id_fkey' })
  camera?: CameraEntity;

  @Column({ type: 'timestamptz' })
  timestamp: Date;

  @Column({ name: 'detection_type', type: 'enum', enum: DETECTION_TYPES, enumName: 'detection_type' })
  detectionType: DetectionType;

  @Column({ name: 'objects_detected', type: 'text', array: true, default: () => "'{}'" })
  objectsDetected: string[];

  /** 0..100 */
  @Column({ type: 'smallint', nullable: true })
  confidence: number | null;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  /**
   * to_tsvector('simple', coalesce(description, '')), kept by the trigger events_description_tsv (see the
   * migration). Stored, so a filter that the planner applies row by row does not recompute it.
   */
  @Column({
    name: 'description_tsv',
    type: 'tsvector',
    nullable: true,
    select: false,
    insert: false,
    update: false,
  })
  descriptionTsv?: string;

  @Column({
    name: 'description_status',
    type: 'enum',
    enum: DESCRIPTION_STATUSES,
    enumName: 'description_status',
    default: 'pending',
  })
  descriptionStatus: DescriptionStatus;

  @Column({ name: 'source_type', type: 'enum', enum: EVENT_SOURCE_TYPES, enumName: 'event_source_type' })
  sourceType: EventSourceType;

  @Index('events_protect_event_id_key', { unique: true, where: 'protect_event_id IS NOT NULL' })
  @Column({ name: 'protect_event_id', type: 'varchar', length: 100, nullable: true })
  protectEventId: string | null;

  /** File name under DATA_DIR/images, made by the service; never a client-supplied path. */
  @Column({ name: 'image_file', type: 'varchar', length: 100, nullable: true })
  imageFile: string | null;

  @Column({ name: 'provider_used', type: 'varchar', length: 50, nullable: true })
  providerUsed: string | null;

  @Column({ name: 'model_used', type: 'varchar', length: 100, nullable: true })
  modelUsed: string | null;

  @Column({ name: 'ai_confidence', type: 'smallint', nullable: true })
  aiConfidence: number | null;

  @Column({ name: 'tokens_used', type: 'integer', nullable: true })
  tokensUsed: number | null;

  @Column({
    name: 'ai_cost_usd',
    type: 'numeric',
    precision: 12,
    scale: 6,
    nullable: true,
    transformer: numeric,
  })
  aiCostUsd: number | null;

  @Column({ name: 'response_time_ms', type: 'integer', nullable: true })
  responseTimeMs: number | null;

  @Column({ name: 'reanalysis_count', type: 'integer', default: 0 })
  reanalysisCount: number;

  @Column({ name: 'reanalysed_at', type: 'timestamptz', nullable: true })
  reanalysedAt: Date | null;

  /** Description attempts since the last success or request (the AI queue backs off with it). */
  @Column({ name: 'description_attempts', type: 'smallint', default: 0, select: false })
  descriptionAttempts?: number;

  /**
   * When the AI queue may (next) describe this event: set with `pending` (now) and after a failure (later);
   * null when nothing is due. The queue's index covers exactly the due rows.
   */
  @Index('events_description_due_idx', { where: 'description_due_at IS NOT NULL' })
  @Column({ name: 'description_due_at', type: 'timestamptz', nullable: true, select: false })
  descriptionDueAt?: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
