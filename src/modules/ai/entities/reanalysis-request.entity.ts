import {
  CreateDateColumn,
  Column,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
} from 'typeorm';
import { EventEntity } from '../../events/entities/event.entity';

/** One accepted POST /events/{id}/reanalyse: at most 3 per event in any rolling hour. */
@Entity('reanalysis_requests')
@Index('reanalysis_requests_event_id_created_at_idx', ['eventId', 'createdAt'])
export class ReanalysisRequestEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'event_id', type: 'uuid' })
  eventId: string;

  @ManyToOne(() => EventEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'event_id' })
  event?: EventEntity;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
