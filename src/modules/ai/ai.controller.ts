import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiResponse, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../../common/auth/access.decorators';
import { ErrorResponseDto } from '../../common/errors/error-response.dto';
import { ApiOp, ApiSuccess } from '../../common/http/api-docs.decorators';
import { AiDescribeService } from './ai-describe.service';
import { AiStatusService } from './ai-status.service';
import {
  AiCapabilitiesDto,
  AiProvidersDto,
  AiRangeQueryDto,
  AiUsageDto,
  ContextMetricsDto,
  DescribeImageDto,
  DescribeResultDto,
  RefinePromptDto,
  RefinePromptResultDto,
} from './dto/ai.dto';

const ProvidersFailed = () =>
  ApiResponse({
    status: 502,
    description:
      'Every provider of the chain was tried and failed (each failure is in the ledger and GET /ai/providers).',
    type: ErrorResponseDto,
  });

const ProvidersUnavailable = () =>
  ApiResponse({
    status: 503,
    description:
      "Every enabled provider's circuit is open after repeated failures (nothing was sent; `Retry-After` says " +
      'when one may be tried again), or the service is shutting down.',
    type: ErrorResponseDto,
    headers: {
      'Retry-After': { description: 'Seconds until a provider may be tried.', schema: { type: 'integer' } },
    },
  });

const PAUSED_429 =
  ' 429 also when a cost cap is reached (detail says which; `Retry-After` lasts until the UTC day or month ends).';

@ApiTags('AI')
@Controller('ai')
export class AiController {
  constructor(
    private readonly status: AiStatusService,
    private readonly describer: AiDescribeService,
  ) {}

  @Get('providers')
  @RequireScope('admin')
  @ApiOp({
    summary: 'List AI providers',
    description:
      'Every provider with its settings state, place in the fallback order, circuit breaker (this instance), ' +
      'latest error and latency (from the ledger), plus whether AI is active, spending against the cost caps ' +
      'and the description queue.',
  })
  @ApiSuccess({ type: AiProvidersDto, description: 'The providers and the state of AI.' })
  listAiProviders(): Promise<AiProvidersDto> {
    return this.status.providers();
  }

  @Post('describe')
  @RequireScope('admin')
  @HttpCode(200)
  @ApiOp({
    summary: 'Describe an image',
    description:
      'Exactly one of `image_base64` (JPEG or PNG), `event_id` (its stored image) or `camera_id` (the current ' +
      'snapshot of a running camera). Uses the fallback chain, or only `provider`. Creates no event; the call ' +
      'is in the usage ledger (purpose `adhoc`). 400: the event has no image. 404: unknown event or camera. ' +
      '409: the camera is not running, the provider (or every provider) is not enabled and configured.' +
      PAUSED_429,
    errors: [400, 404, 409, 415, 422],
  })
  @ApiResponse({
    status: 413,
    description: 'Request body (or the decoded image) larger than 10 MiB.',
    type: ErrorResponseDto,
  })
  @ProvidersFailed()
  @ProvidersUnavailable()
  @ApiSuccess({ type: DescribeResultDto, description: 'The description and what it cost.' })
  describeImage(@Body() dto: DescribeImageDto): Promise<DescribeResultDto> {
    return this.describer.describe(dto);
  }

  @Get('usage')
  @RequireScope('admin')
  @ApiOp({
    summary: 'AI usage statistics',
    description:
      'Provider calls in the range (default: the last 30 days), from the ledger: every call counts, ' +
      'successful or not (a fallback makes several calls for one description). Days are UTC.',
    errors: [422],
  })
  @ApiSuccess({ type: AiUsageDto, description: 'Totals, per provider and per day.' })
  getAiUsage(@Query() query: AiRangeQueryDto): Promise<AiUsageDto> {
    return this.status.usage(query);
  }

  @Get('capabilities')
  @RequireScope('admin')
  @ApiOp({
    summary: 'AI provider capabilities',
    description: 'What each provider can do, from its documentation.',
  })
  @ApiSuccess({ type: AiCapabilitiesDto, description: 'Every provider.' })
  getAiCapabilities(): Promise<AiCapabilitiesDto> {
    return this.status.capabilities();
  }

  @Get('context-metrics')
  @RequireScope('admin')
  @ApiOp({
    summary: 'AI context metrics',
    description:
      "How the camera's recent events added to prompts (`ai_context_enabled`) affect requests: event " +
      'descriptions in the range (default: the last 30 days) from the ledger, and the context cache of this ' +
      'instance since it started.',
    errors: [422],
  })
  @ApiSuccess({ type: ContextMetricsDto, description: 'The metrics.' })
  getAiContextMetrics(@Query() query: AiRangeQueryDto): Promise<ContextMetricsDto> {
    return this.status.contextMetrics(query);
  }

  @Post('refine-prompt')
  @RequireScope('admin')
  @HttpCode(200)
  @ApiOp({
    summary: 'AI-assisted prompt refinement',
    description:
      'Sends the prompt (default: the `ai_prompt` setting) and the newest 30 rated descriptions (with their ' +
      'corrections) to the first working provider (or only `provider`) and returns its suggestion. Nothing ' +
      'is changed: store the suggestion with PUT /system/settings. 409 when no description has been rated ' +
      'yet, or no provider is enabled and configured.' +
      PAUSED_429,
    errors: [400, 409, 413, 415, 422],
  })
  @ProvidersFailed()
  @ProvidersUnavailable()
  @ApiSuccess({ type: RefinePromptResultDto, description: 'The suggestion.' })
  refinePrompt(@Body() dto: RefinePromptDto): Promise<RefinePromptResultDto> {
    return this.describer.refinePrompt(dto);
  }
}
