// @swc/jest compiles TypeScript (with decorator metadata) without type-checking; `npm run typecheck` does that.
// NestJS 12 and some of its dependencies are ESM-only: they must be transformed too (see ../shared/stack.md).
const ESM_ONLY = [
  '@nestjs',
  'file-type',
  'strtok3',
  'token-types',
  'peek-readable',
  'uint8array-extras',
  '@tokenizer',
  'load-esm',
  'unifi-protect',
];

const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
  },
];

module.exports = {
  testEnvironment: 'node',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  transform: { '^.+\\.(t|j|mj)s$': swc },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};
