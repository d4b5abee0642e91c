import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { DescriptionStatus } from '../events/entities/event.entity';
import type { AiCallPurpose } from './entities/ai-call.entity';
import type { FeedbackRating } from './entities/event-feedback.entity';
import type { ContextEvent } from './prompt-builder';

/** One row of the ledger, as written. */
export interface AiCallRow {
  provider: string;
  model: string;
  purpose: AiCallPurpose;
  eventId: string | null;
  success: boolean;
  error: string | null;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  latencyMs: number;
  contextEvents: number;
  contextTokens: number;
}

/** Usage figures of one group (all calls, one provider or one UTC day). */
export interface UsageRow {
  provider: string | null;
  day: string | null;
  /** GROUPING(provider, day): 3 = the total, 1 = per provider, 2 = per day. */
  grouping: number;
  calls: number;
  successes: number;
  failures: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  avg_latency_ms: number | null;
}

export interface ProviderStatsRow {
  provider: string;
  last_latency_ms: number | null;
  last_success_at: Date | null;
  avg_latency_ms: number | null;
  last_error: string | null;
  last_error_at: Date | null;
}

export interface ContextMetricsRow {
  requests: number;
  requests_with_context: number;
  avg_context_events: number | null;
  avg_context_tokens: number | null;
  avg_latency_with_context_ms: number | null;
  avg_latency_without_context_ms: number | null;
}

/** An event the queue has claimed (leased), with what its prompt needs. */
export interface ClaimedEvent {
  id: string;
  cameraId: string;
  cameraName: string;
  promptOverride: string | null;
  timestamp: Date;
  imageFile: string | null;
  descriptionStatus: DescriptionStatus;
  /** Attempts including this one. */
  attempts: number;
  reanalysisCount: number;
  /** Whether a re-analysis request is waiting for this description. */
  reanalysis: boolean;
  /** The lease: `description_due_at` as PostgreSQL wrote it (text, microseconds kept) — the claim's token. */
  lease: string;
  /** When the claim was made (database clock). */
  claimedAt: Date;
}

/** How a lease ends (see finishLease). */
export type LeaseEnd =
  /** Described: nothing more is due. */
  | { kind: 'done' }
  /** Failed: due again after `delayMs`; the attempt counts. */
  | { kind: 'retry'; delayMs: number }
  /** Not attempted (AI off or paused, every circuit open, shutting down): due again after `delayMs`. */
  | { kind: 'release'; delayMs: number };

export interface FeedbackRow {
  id: string;
  eventId: string;
  rating: FeedbackRating;
  correction: string | null;
  description: string | null;
  createdAt: Date;
}

export interface RatedDescription {
  rating: FeedbackRating;
  description: string;
  correction: string | null;
  detectionType: string;
}

/** The SQL of the AI module: the ledger and its aggregates, the description queue, feedback, re-analysis. */
@Injectable()
export class AiRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async insertCall(row: AiCallRow): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO ai_calls (provider, model, purpose, event_id, success, error, input_tokens, output_tokens,
                             cost_usd, latency_ms, context_events, context_tokens)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [
        row.provider,
        row.model.slice(0, 200),
        row.purpose,
        row.eventId,
        row.success,
        row.error,
        row.inputTokens,
        row.outputTokens,
        row.costUsd,
        row.latencyMs,
        row.contextEvents,
        row.contextTokens,
      ],
    );
  }

  /** Dollars spent since `dayStart` and since `monthStart` (monthStart <= dayStart), by the ledger. */
  async spend(dayStart: Date, monthStart: Date): Promise<{ today: number; month: number }> {
    const rows = await this.dataSource.query<{ today: number; month: number }[]>(
      `SELECT coalesce(sum(cost_usd) FILTER (WHERE created_at >= $1), 0)::float8 AS today,
              coalesce(sum(cost_usd), 0)::float8 AS month
       FROM ai_calls WHERE created_at >= $2`,
      [dayStart, monthStart],
    );
    return rows[0];
  }

  /**
   * Per provider: its latest successful call (latency, time), the mean latency of its last 100 successful
   * calls, and its latest failure (message, time). Each is an index walk on (provider, created_at).
   */
  async providerStats(providers: string[]): Promise<ProviderStatsRow[]> {
    return this.dataSource.query<ProviderStatsRow[]>(
      `SELECT p.name AS provider, s.latency_ms AS last_latency_ms, s.created_at AS last_success_at,
              a.avg_latency_ms, f.error AS last_error, f.created_at AS last_error_at
       FROM unnest($1::text[]) AS p(name)
       LEFT JOIN LATERAL (SELECT latency_ms, created_at FROM ai_calls
                          WHERE provider = p.name AND success ORDER BY created_at DESC LIMIT 1) s ON true
       LEFT JOIN LATERAL (SELECT round(avg(x.latency_ms))::int AS avg_latency_ms
                          FROM (SELECT latency_ms FROM ai_calls WHERE provider = p.name AND success
                                ORDER BY created_at DESC LIMIT 100) x) a ON true
       LEFT JOIN LATERAL (SELECT error, created_at FROM ai_calls
                          WHERE provider = p.name AND NOT success ORDER BY created_at DESC LIMIT 1) f ON true`,
      [providers],
    );
  }

  /** GET /ai/usage: totals, per provider and per UTC day of the calls in [start, end] (one scan). */
  async usage(start: Date, end: Date): Promise<UsageRow[]> {
    return this.dataSource.query<UsageRow[]>(
      `SELECT a.provider, a.day, GROUPING(a.provider, a.day) AS grouping,
              count(*)::int AS calls,
              (count(*) FILTER (WHERE a.success))::int AS successes,
              (count(*) FILTER (WHERE NOT a.success))::int AS failures,
              coalesce(sum(a.input_tokens), 0)::float8 AS input_tokens,
              coalesce(sum(a.output_tokens), 0)::float8 AS output_tokens,
              coalesce(sum(a.cost_usd), 0)::float8 AS cost_usd,
              round(avg(a.latency_ms) FILTER (WHERE a.success))::int AS avg_latency_ms
       FROM (SELECT provider, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, success,
                    input_tokens, output_tokens, cost_usd, latency_ms
             FROM ai_calls WHERE created_at >= $1 AND created_at <= $2) a
       GROUP BY GROUPING SETS ((), (a.provider), (a.day))`,
      [start, end],
    );
  }

  /** GET /ai/context-metrics: event descriptions (describe, reanalyse) in [start, end], with and without context. */
  async contextMetrics(start: Date, end: Date): Promise<ContextMetricsRow> {
    const rows = await this.dataSource.query<ContextMetricsRow[]>(
      `SELECT count(*)::int AS requests,
              (count(*) FILTER (WHERE context_events > 0))::int AS requests_with_context,
              (avg(context_events) FILTER (WHERE context_events > 0))::float8 AS avg_context_events,
              (avg(context_tokens) FILTER (WHERE context_events > 0))::float8 AS avg_context_tokens,
              (avg(latency_ms) FILTER (WHERE success AND context_events > 0))::float8 AS avg_latency_with_context_ms,
              (avg(latency_ms) FILTER (WHERE success AND context_events = 0))::float8 AS avg_latency_without_context_ms
       FROM ai_calls
       WHERE purpose IN ('describe', 'reanalyse') AND created_at >= $1 AND created_at <= $2`,
      [start, end],
    );
    return rows[0];
  }

  /**
   * A camera's newest described events, newest first: all of them (`before` undefined, for the context
   * cache), or those taken in (`after`, `before`] (an event in the past).
   */
  async describedEvents(
    cameraId: string,
    limit: number,
    window?: { after: Date; before: Date },
  ): Promise<ContextEvent[]> {
    const params: unknown[] = [cameraId, limit];
    let range = '';
    if (window) {
      params.push(window.after, window.before);
      range = 'AND timestamp > $3 AND timestamp <= $4';
    }
    return this.dataSource.query<ContextEvent[]>(
      `SELECT id, timestamp, detection_type AS "detectionType", description FROM events
       WHERE camera_id = $1 AND description_status = 'complete' AND description IS NOT NULL ${range}
       ORDER BY timestamp DESC LIMIT $2`,
      params,
    );
  }

  /**
   * Claims up to `limit` due events (`description_due_at <= now()`, oldest due first) for `leaseMs`: their
   * due time moves to the end of the lease, so no other worker or instance takes them meanwhile (rows that
   * another claim holds are skipped), and a crashed worker's events come due again when the lease ends.
   * The attempt counter goes up with each claim.
   */
  async claimDue(limit: number, leaseMs: number): Promise<ClaimedEvent[]> {
    return this.dataSource.query<ClaimedEvent[]>(
      `WITH due AS (
         SELECT id FROM events WHERE description_due_at <= now()
         ORDER BY description_due_at LIMIT $1 FOR UPDATE SKIP LOCKED
       ), claimed AS (
         UPDATE events e
         SET description_due_at = now() + make_interval(secs => $2::float8 / 1000),
             description_attempts = LEAST(e.description_attempts + 1, 32767)
         FROM due WHERE e.id = due.id
         RETURNING e.id, e.camera_id, e.timestamp, e.image_file, e.description_status, e.description_attempts,
                   e.reanalysis_count, e.reanalysed_at, e.description_due_at
       )
       SELECT claimed.id, claimed.camera_id AS "cameraId", c.name AS "cameraName",
              c.prompt_override AS "promptOverride", claimed.timestamp, claimed.image_file AS "imageFile",
              claimed.description_status AS "descriptionStatus", claimed.description_attempts AS attempts, claimed.reanalysis_count AS "reanalysisCount",
              EXISTS (SELECT 1 FROM reanalysis_requests r
                      WHERE r.event_id = claimed.id
                        AND r.created_at > coalesce(claimed.reanalysed_at, '-infinity'::timestamptz)) AS reanalysis,
              claimed.description_due_at::text AS lease, now() AS "claimedAt"
       FROM claimed JOIN cameras c ON c.id = claimed.camera_id`,
      [limit, leaseMs],
    );
  }

  /**
   * Ends a lease, only if the event still holds it: a re-analysis request (or anything else that made the
   * event due again meanwhile) wins, and the event stays due. Returns whether the lease was still held.
   */
  async finishLease(id: string, lease: string, end: LeaseEnd): Promise<boolean> {
    const due = end.kind === 'done' ? 'NULL' : `now() + make_interval(secs => $3::float8 / 1000)`;
    const attempts =
      end.kind === 'done'
        ? '0'
        : end.kind === 'release'
          ? 'GREATEST(description_attempts - 1, 0)'
          : 'description_attempts';
    const params: unknown[] = [id, lease];
    if (end.kind !== 'done') params.push(end.delayMs);
    const [, affected] = await this.dataSource.query<[unknown[], number]>(
      `UPDATE events SET description_due_at = ${due}, description_attempts = ${attempts}
       WHERE id = $1 AND description_due_at = $2::timestamptz`,
      params,
    );
    return affected > 0;
  }

  /** How many events are waiting for a description (due now or later). */
  async queueDepth(): Promise<{ due: number; waiting: number }> {
    const rows = await this.dataSource.query<{ due: number; waiting: number }[]>(
      `SELECT (count(*) FILTER (WHERE description_due_at <= now()))::int AS due, count(*)::int AS waiting
       FROM events WHERE description_due_at IS NOT NULL`,
    );
    return rows[0];
  }

  /** An event's image, camera and time (POST /ai/describe with event_id, re-analysis). */
  async eventForDescription(id: string): Promise<{
    id: string;
    imageFile: string | null;
    timestamp: Date;
    cameraId: string;
    cameraName: string;
    promptOverride: string | null;
  } | null> {
    const rows = await this.dataSource.query(
      `SELECT e.id, e.image_file AS "imageFile", e.timestamp, e.camera_id AS "cameraId", c.name AS "cameraName",
              c.prompt_override AS "promptOverride"
       FROM events e JOIN cameras c ON c.id = e.camera_id WHERE e.id = $1`,
      [id],
    );
    return rows[0] ?? null;
  }

  async cameraForPrompt(id: string): Promise<{ name: string; promptOverride: string | null } | null> {
    const rows = await this.dataSource.query(
      'SELECT name, prompt_override AS "promptOverride" FROM cameras WHERE id = $1',
      [id],
    );
    return rows[0] ?? null;
  }

  /** Stores a rating with the description it rates; null when the event does not exist. */
  async insertFeedback(
    eventId: string,
    rating: FeedbackRating,
    correction: string | null,
  ): Promise<FeedbackRow | null> {
    const rows = await this.dataSource.query<FeedbackRow[]>(
      `INSERT INTO event_feedback (event_id, rating, correction, description)
       SELECT id, $2::feedback_rating, $3, description FROM events WHERE id = $1
       RETURNING id, event_id AS "eventId", rating, correction, description, created_at AS "createdAt"`,
      [eventId, rating, correction],
    );
    return rows[0] ?? null;
  }

  /** The newest ratings of descriptions (each rating row once; those without a description left out). */
  async recentRatings(limit: number): Promise<RatedDescription[]> {
    return this.dataSource.query<RatedDescription[]>(
      `SELECT f.rating, f.description, f.correction, e.detection_type AS "detectionType"
       FROM event_feedback f JOIN events e ON e.id = f.event_id
       WHERE f.description IS NOT NULL
       ORDER BY f.created_at DESC LIMIT $1`,
      [limit],
    );
  }

  /**
   * Records a re-analysis request unless the event already had `limit` in the last `windowMs` (checked and
   * written under the event's row lock, so concurrent requests cannot both pass). Answers what happened.
   */
  async requestReanalysis(
    eventId: string,
    limit: number,
    windowMs: number,
  ): Promise<
    | { outcome: 'accepted' }
    | { outcome: 'not_found' }
    | { outcome: 'no_image' }
    | { outcome: 'limited'; retryAfterMs: number }
  > {
    return this.dataSource.transaction(async (manager) => {
      const events: { image_file: string | null }[] = await manager.query(
        'SELECT image_file FROM events WHERE id = $1 FOR UPDATE',
        [eventId],
      );
      if (!events[0]) return { outcome: 'not_found' };
      if (!events[0].image_file) return { outcome: 'no_image' };
      const recent: { n: number; retry_after_ms: number | null }[] = await manager.query(
        `SELECT count(*)::int AS n,
                (extract(epoch FROM min(created_at) + make_interval(secs => $2::float8 / 1000) - now()) * 1000)::float8
                  AS retry_after_ms
         FROM reanalysis_requests
         WHERE event_id = $1 AND created_at > now() - make_interval(secs => $2::float8 / 1000)`,
        [eventId, windowMs],
      );
      if (recent[0].n >= limit)
        return { outcome: 'limited', retryAfterMs: recent[0].retry_after_ms ?? windowMs };
      await manager.query('INSERT INTO reanalysis_requests (event_id) VALUES ($1)', [eventId]);
      return { outcome: 'accepted' };
    });
  }
}
