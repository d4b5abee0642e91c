import { Body, Controller, Get, Put } from '@nestjs/common';
import { ApiBody, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../../common/auth/access.decorators';
import { ApiOp, ApiSuccess } from '../../common/http/api-docs.decorators';
import { SECRET_MASK, SettingsResponse, SettingsResponseDto, SettingsUpdateDto } from './dto/settings.dto';
import { SettingsService } from './settings.service';

@ApiTags('System')
@RequireScope('admin')
@Controller('system')
export class SettingsController {
  constructor(private readonly settings: SettingsService) {}

  @Get('settings')
  @ApiOp({
    summary: 'Get settings',
    description:
      'Every setting with its current value; settings never changed show their defaults. Secret values ' +
      `(API keys) are write-only: they read \`"${SECRET_MASK}"\` when set and null when not, with a boolean ` +
      '`<name>_set` beside them.',
  })
  @ApiSuccess({ type: SettingsResponseDto, description: 'All settings.' })
  getSettings(): Promise<SettingsResponse> {
    return this.settings.list();
  }

  @Put('settings')
  @ApiOp({
    summary: 'Update settings',
    description:
      'A partial update: send only the settings to change. Objects merge field by field (setting ' +
      '`{"ai_providers":{"openai":{"model":"gpt-4o"}}}` keeps every other field of every provider). ' +
      'Unknown keys and invalid values are 422 naming each field, and then nothing is changed. ' +
      `A secret sent as \`"${SECRET_MASK}"\` keeps its stored value; null or "" removes it. ` +
      'Changes apply on every instance without a restart. Answers with all settings, as GET does.',
    errors: [400, 413, 415, 422],
  })
  @ApiBody({ type: SettingsUpdateDto })
  @ApiSuccess({ type: SettingsResponseDto, description: 'The settings after the update.' })
  updateSettings(@Body() body: Record<string, unknown>): Promise<SettingsResponse> {
    return this.settings.update(body);
  }
}
