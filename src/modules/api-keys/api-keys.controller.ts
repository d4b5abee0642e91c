import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, RequireScope } from '../../common/auth/access.decorators';
import type { Principal } from '../../common/auth/principal';
import { ApiOp, ApiSuccess } from '../../common/http/api-docs.decorators';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import { ApiKeysService } from './api-keys.service';
import {
  ApiKeyCreatedDto,
  ApiKeyResponseDto,
  ApiKeyUsageDto,
  CreateApiKeyDto,
  ListApiKeysQueryDto,
} from './dto/api-key.dto';

const KEY_ID = new UuidParamPipe('API key');
const KeyIdParam = () => ApiParam({ name: 'key_id', format: 'uuid', description: 'The key id.' });

@ApiTags('API keys')
@RequireScope('admin')
@Controller('api-keys')
export class ApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Get()
  @ApiOp({
    summary: 'List API keys',
    description: 'Newest first. Revoked keys only with `include_revoked=true`.',
    errors: [422],
  })
  @ApiSuccess({ type: ApiKeyResponseDto, isArray: true, description: 'The keys (never the full key).' })
  listApiKeys(@Query() query: ListApiKeysQueryDto): Promise<ApiKeyResponseDto[]> {
    return this.apiKeys.list(query.include_revoked ?? false);
  }

  @Post()
  @ApiOp({
    summary: 'Create an API key',
    description: 'Returns the full key once, in `key`; it can never be retrieved again.',
    errors: [400, 413, 415, 422],
  })
  @ApiSuccess({ status: 201, type: ApiKeyCreatedDto, description: 'The key was created.' })
  createApiKey(
    @Body() dto: CreateApiKeyDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<ApiKeyCreatedDto> {
    return this.apiKeys.create(dto, principal);
  }

  @Get(':key_id')
  @KeyIdParam()
  @ApiOp({ summary: 'Get an API key', errors: [404] })
  @ApiSuccess({ type: ApiKeyResponseDto, description: 'The key record, as in the list.' })
  getApiKey(@Param('key_id', KEY_ID) id: string): Promise<ApiKeyResponseDto> {
    return this.apiKeys.get(id);
  }

  @Delete(':key_id')
  @KeyIdParam()
  @HttpCode(204)
  @ApiOp({
    summary: 'Revoke an API key',
    description: 'Takes effect at once on every instance. Revoking a revoked key answers 204 again.',
    errors: [404],
  })
  @ApiSuccess({ status: 204, description: 'The key is revoked.' })
  revokeApiKey(@Param('key_id', KEY_ID) id: string): Promise<void> {
    return this.apiKeys.revoke(id);
  }

  @Get(':key_id/usage')
  @KeyIdParam()
  @ApiOp({ summary: "Get an API key's usage", description: 'Current within one second.', errors: [404] })
  @ApiSuccess({ type: ApiKeyUsageDto, description: 'Usage counters of the key.' })
  getApiKeyUsage(@Param('key_id', KEY_ID) id: string): Promise<ApiKeyUsageDto> {
    return this.apiKeys.getUsage(id);
  }
}
