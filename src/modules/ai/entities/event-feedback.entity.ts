import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
} from 'typeorm';
import { EventEntity } from '../../events/entities/event.entity';

export const FEEDBACK_RATINGS = ['helpful', 'not_helpful'] as const;
export type FeedbackRating = (typeof FEEDBACK_RATINGS)[number];

/** A user's rating of an event's description (POST /events/{id}/feedback); /ai/refine-prompt learns from them. */
@Entity('event_feedback')
@Index('event_feedback_event_id_idx', ['eventId'])
@Index('event_feedback_created_at_idx', ['createdAt'])
export class EventFeedbackEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'event_id', type: 'uuid' })
  eventId: string;

  @ManyToOne(() => EventEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'event_id' })
  event?: EventEntity;

  @Column({ type: 'enum', enum: FEEDBACK_RATINGS, enumName: 'feedback_rating' })
  rating: FeedbackRating;

  @Column({ type: 'text', nullable: true })
  correction: string | null;

  /** The description that was rated (it may be re-analysed later). */
  @Column({ name: 'description', type: 'text', nullable: true })
  description: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
