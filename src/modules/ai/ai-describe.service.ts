import { Injectable } from '@nestjs/common';
import { readFile } from 'node:fs/promises';
import {
  BusinessRuleError,
  ConflictError,
  NotFoundError,
  ValidationFailedError,
} from '../../common/errors/app-errors';
import { ImageStore } from '../../common/storage/image-store';
import { CaptureService } from '../cameras/capture/capture.service';
import { SettingsService } from '../settings/settings.service';
import { AiRepository } from './ai.repository';
import { AiService } from './ai.service';
import { DescribeImageDto, DescribeResultDto, RefinePromptDto, RefinePromptResultDto } from './dto/ai.dto';
import { decodeImage, ImageInput } from './image-input';
import { PromptService, PromptSubject } from './prompt.service';
import { BLANK_JPEG, buildRefineRequest, parseRefineAnswer, REFINE_MAX_RATINGS } from './refine-prompt';

/** POST /ai/describe and POST /ai/refine-prompt: one request along the fallback chain each, nothing stored but the ledger. */
@Injectable()
export class AiDescribeService {
  constructor(
    private readonly ai: AiService,
    private readonly prompts: PromptService,
    private readonly repository: AiRepository,
    private readonly images: ImageStore,
    private readonly capture: CaptureService,
    private readonly settings: SettingsService,
  ) {}

  /**
   * Describes an image given as base64, an event's stored image or a running camera's snapshot (exactly one).
   * Creates and changes no event; the call is in the ledger with purpose `adhoc`.
   */
  async describe(dto: DescribeImageDto): Promise<DescribeResultDto> {
    const sources = (['image_base64', 'event_id', 'camera_id'] as const).filter(
      (key) => dto[key] !== undefined,
    );
    if (sources.length !== 1) {
      throw new ValidationFailedError([
        {
          field: 'body',
          message:
            sources.length === 0
              ? 'one of image_base64, event_id or camera_id is required'
              : `give only one of image_base64, event_id or camera_id (got ${sources.join(', ')})`,
        },
      ]);
    }
    const { image, subject } = await this.source(dto);
    const prompt = await this.prompts.build({ ...subject, basePrompt: dto.prompt, withContext: false });
    const outcome = await this.ai.run({
      image: image.data,
      mimeType: image.mimeType,
      prompt: prompt.prompt,
      structured: true,
      purpose: 'adhoc',
      eventId: subject.eventId ?? null,
      provider: dto.provider,
    });
    const answer = outcome.result.answer!;
    return {
      description: answer.description,
      detection_type: answer.detection_type,
      objects_detected: answer.objects_detected,
      confidence: answer.confidence,
      provider: outcome.provider,
      model: outcome.model,
      input_tokens: outcome.inputTokens,
      output_tokens: outcome.outputTokens,
      tokens_used: outcome.inputTokens + outcome.outputTokens,
      cost_usd: outcome.costUsd,
      response_time_ms: outcome.latencyMs,
    };
  }

  private async source(
    dto: DescribeImageDto,
  ): Promise<{ image: ImageInput; subject: Omit<PromptSubject, 'withContext'> }> {
    if (dto.image_base64 !== undefined)
      return { image: decodeImage(dto.image_base64), subject: { time: new Date() } };
    if (dto.event_id !== undefined) {
      const event = await this.repository.eventForDescription(dto.event_id);
      if (!event) throw new NotFoundError('Event');
      if (!event.imageFile) throw new BusinessRuleError('The event has no image to describe');
      let data: Buffer;
      try {
        data = await readFile(this.images.path(event.imageFile));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT')
          throw new ConflictError("The event's image file is missing from the data directory");
        throw error;
      }
      return {
        image: { data, mimeType: 'image/jpeg' },
        subject: {
          eventId: event.id,
          cameraId: event.cameraId,
          cameraName: event.cameraName,
          promptOverride: event.promptOverride,
          time: event.timestamp,
        },
      };
    }
    const cameraId = dto.camera_id!;
    // 404 for an unknown camera, 409 when it is not running here.
    const data = await this.capture.snapshot(cameraId);
    const camera = await this.repository.cameraForPrompt(cameraId);
    if (!camera) throw new NotFoundError('Camera');
    return {
      image: { data, mimeType: 'image/jpeg' },
      subject: { cameraId, cameraName: camera.name, promptOverride: camera.promptOverride, time: new Date() },
    };
  }

  /**
   * Asks a provider (free text) for a better prompt, from the newest rated descriptions. 409 without any
   * rating yet. An answer without a usable prompt counts as a failure and the next provider is asked.
   */
  async refinePrompt(dto: RefinePromptDto): Promise<RefinePromptResultDto> {
    const ratings = await this.repository.recentRatings(REFINE_MAX_RATINGS);
    if (ratings.length === 0)
      throw new ConflictError(
        'No rated descriptions yet: rate some events (POST /events/{id}/feedback) first',
      );
    const current = dto.prompt ?? (await this.settings.get('ai_prompt'));
    const outcome = await this.ai.run(
      {
        image: BLANK_JPEG,
        mimeType: 'image/jpeg',
        prompt: buildRefineRequest(current, ratings),
        structured: false,
        purpose: 'refine_prompt',
        provider: dto.provider,
      },
      (result, provider) => parseRefineAnswer(result.text, provider),
    );
    return {
      suggested_prompt: outcome.value.prompt,
      summary: outcome.value.summary,
      feedback_used: ratings.length,
      provider: outcome.provider,
      model: outcome.model,
    };
  }
}
