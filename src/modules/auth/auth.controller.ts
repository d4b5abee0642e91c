import { Body, Controller, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { CurrentPrincipal, Public, RequireSession } from '../../common/auth/access.decorators';
import { ACCESS_TOKEN_COOKIE } from '../../common/auth/credentials';
import type { Principal } from '../../common/auth/principal';
import { ErrorResponseDto } from '../../common/errors/error-response.dto';
import { ApiOp, ApiSuccess } from '../../common/http/api-docs.decorators';
import { UserResponseDto } from '../users/dto/user.dto';
import { AuthService } from './auth.service';
import { ChangePasswordDto, LoginDto, LoginResponseDto } from './dto/auth.dto';

type UserPrincipal = Extract<Principal, { kind: 'user' }>;

@ApiTags('Auth')
@Controller('auth')
export class AuthController {
  constructor(
    private readonly auth: AuthService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post('login')
  @Public()
  @HttpCode(200)
  @ApiOp({
    summary: 'Log in',
    description:
      'Returns a JWT and sets it as the HttpOnly cookie `vigil_access_token`. Use either the cookie or ' +
      '`Authorization: Bearer <token>`. 10 failed attempts per 15 minutes per username and IP, then 429.',
    errors: [400, 413, 415, 422],
  })
  @ApiSuccess({ type: LoginResponseDto, description: 'Logged in.' })
  @ApiResponse({
    status: 401,
    description: 'Wrong username or password.',
    type: ErrorResponseDto,
    example: { detail: 'Invalid credentials', status_code: 401 },
  })
  @ApiResponse({
    status: 429,
    description: 'Too many failed attempts.',
    type: ErrorResponseDto,
    headers: { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' } } },
    example: { detail: 'Too many failed login attempts. Retry after 840 seconds.', status_code: 429 },
  })
  async login(
    @Body() dto: LoginDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<LoginResponseDto> {
    const result = await this.auth.login(dto, req.ip ?? '');
    res.cookie(ACCESS_TOKEN_COOKIE, result.access_token, {
      httpOnly: true,
      sameSite: 'lax',
      path: '/',
      secure: req.secure,
      maxAge: result.expires_in * 1000,
    });
    return result;
  }

  @Post('logout')
  @RequireSession()
  @HttpCode(204)
  @ApiOp({ summary: 'Log out', description: 'Ends this session: its token stops working at once.' })
  @ApiSuccess({ status: 204, description: 'Logged out; the cookie is cleared.' })
  async logout(
    @CurrentPrincipal() principal: UserPrincipal,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ) {
    await this.auth.logout(principal);
    res.clearCookie(ACCESS_TOKEN_COOKIE, { httpOnly: true, sameSite: 'lax', path: '/', secure: req.secure });
  }

  @Get('me')
  @RequireSession()
  @ApiOp({ summary: 'The logged-in user' })
  @ApiSuccess({ type: UserResponseDto, description: 'The user of this session.' })
  getCurrentUser(@CurrentPrincipal() principal: UserPrincipal): Promise<UserResponseDto> {
    return this.auth.me(principal);
  }

  @Post('change-password')
  @RequireSession()
  @HttpCode(204)
  @ApiOp({
    summary: 'Change your password',
    description: 'Needs the current password (400 when wrong). Ends your other sessions; this one stays.',
    errors: [400, 413, 415, 422],
  })
  @ApiSuccess({ status: 204, description: 'Password changed.' })
  changePassword(
    @CurrentPrincipal() principal: UserPrincipal,
    @Body() dto: ChangePasswordDto,
  ): Promise<void> {
    return this.auth.changePassword(principal, dto);
  }
}
