import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../../common/auth/access.decorators';
import { ApiOp, ApiSuccess } from '../../common/http/api-docs.decorators';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import { CreateUserDto, UpdateUserDto, UserResponseDto } from './dto/user.dto';
import { UsersService } from './users.service';

const USER_ID = new UuidParamPipe('User');
const UserIdParam = () => ApiParam({ name: 'id', format: 'uuid', description: 'The user id.' });

@ApiTags('Users')
@RequireScope('admin')
@Controller('users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Get()
  @ApiOp({ summary: 'List users' })
  @ApiSuccess({ type: UserResponseDto, isArray: true, description: 'Every user, oldest first.' })
  listUsers(): Promise<UserResponseDto[]> {
    return this.users.list();
  }

  @Post()
  @ApiOp({ summary: 'Create a user', errors: [400, 409, 413, 415, 422] })
  @ApiSuccess({ status: 201, type: UserResponseDto, description: 'The user was created.' })
  createUser(@Body() dto: CreateUserDto): Promise<UserResponseDto> {
    return this.users.create(dto);
  }

  @Get(':id')
  @UserIdParam()
  @ApiOp({ summary: 'Get a user', errors: [404] })
  @ApiSuccess({ type: UserResponseDto, description: 'The user.' })
  getUser(@Param('id', USER_ID) id: string): Promise<UserResponseDto> {
    return this.users.get(id);
  }

  @Put(':id')
  @UserIdParam()
  @ApiOp({
    summary: 'Update a user',
    description:
      "Partial update of password, role and is_active. A new password or deactivation ends the user's sessions. " +
      'The last active admin cannot be demoted or deactivated (400).',
    errors: [400, 404, 413, 415, 422],
  })
  @ApiSuccess({ type: UserResponseDto, description: 'The updated user.' })
  updateUser(@Param('id', USER_ID) id: string, @Body() dto: UpdateUserDto): Promise<UserResponseDto> {
    return this.users.update(id, dto);
  }

  @Delete(':id')
  @UserIdParam()
  @HttpCode(204)
  @ApiOp({
    summary: 'Delete a user',
    description: 'The last active admin cannot be deleted (400).',
    errors: [400, 404],
  })
  @ApiSuccess({ status: 204, description: 'The user is deleted and their sessions end.' })
  deleteUser(@Param('id', USER_ID) id: string): Promise<void> {
    return this.users.remove(id);
  }
}
