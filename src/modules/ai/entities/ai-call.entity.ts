import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export const AI_CALL_PURPOSES = ['describe', 'reanalyse', 'adhoc', 'refine_prompt'] as const;
export type AiCallPurpose = (typeof AI_CALL_PURPOSES)[number];

const numeric = {
  to: (value: number | null) => value,
  from: (value: string | null) => (value === null ? null : Number(value)),
};

/**
 * One request to an AI provider, successful or not: the ledger behind GET /ai/usage, the cost caps and the
 * providers' latency. Kept when its event is deleted (the money was spent).
 */
@Entity('ai_calls')
@Index('ai_calls_created_at_idx', ['createdAt'])
@Index('ai_calls_provider_created_at_idx', ['provider', 'createdAt'])
export class AiCallEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 50 })
  provider: string;

  @Column({ type: 'varchar', length: 200 })
  model: string;

  @Column({ type: 'enum', enum: AI_CALL_PURPOSES, enumName: 'ai_call_purpose' })
  purpose: AiCallPurpose;

  /** The event described, if any (no foreign key: the ledger outlives events). */
  @Column({ name: 'event_id', type: 'uuid', nullable: true })
  eventId: string | null;

  @Column({ type: 'boolean' })
  success: boolean;

  /** Why it failed (never a secret: provider messages are scrubbed of keys). */
  @Column({ type: 'text', nullable: true })
  error: string | null;

  @Column({ name: 'input_tokens', type: 'integer', default: 0 })
  inputTokens: number;

  @Column({ name: 'output_tokens', type: 'integer', default: 0 })
  outputTokens: number;

  @Column({ name: 'cost_usd', type: 'numeric', precision: 12, scale: 6, default: 0, transformer: numeric })
  costUsd: number;

  @Column({ name: 'latency_ms', type: 'integer' })
  latencyMs: number;

  /** Whether the prompt carried the camera's recent-event context, and how much (GET /ai/context-metrics). */
  @Column({ name: 'context_events', type: 'integer', default: 0 })
  contextEvents: number;

  @Column({ name: 'context_tokens', type: 'integer', default: 0 })
  contextTokens: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
