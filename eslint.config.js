// Type-aware lint: floating promises and import cycles are errors, because both hide
// exactly the bugs a durable runtime cannot afford (an unawaited write, a layering leak).
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

// Which folders of src/ each folder may import (the arrows of docs/architecture.md).
const arrows = {
  time: [],
  // What images are (types by their bytes, picture URLs): the API's and the configuration's.
  media: [],
  // The engine runs every kind of leased and outbox work and knows none of them: it reads
  // no table (the kinds bring their statements), only the wake-ups' type.
  work: ['store', 'time'],
  providers: ['config'],
  config: ['media', 'tools'],
  store: ['protocol', 'config'],
  tools: ['config', 'protocol', 'store'],
  agents: ['config', 'store', 'tools'],
  retention: ['config', 'store'],
  catalog: ['config', 'providers', 'store'],
  missions: [
    'agents',
    'config',
    'protocol',
    'providers',
    'store',
    'telemetry',
    'time',
    'tools',
    'work',
  ],
  runtime: [
    'agents',
    'config',
    'protocol',
    'providers',
    'retention',
    'store',
    'time',
    'telemetry',
    'tools',
    'work',
  ],
  // Spans of turns and missions' calls; the OpenTelemetry SDK is imported here and nowhere else.
  telemetry: ['config'],
  adapters: ['agents', 'config', 'media', 'protocol', 'store', 'time', 'work'],
  webhooks: ['config', 'protocol', 'store', 'time', 'work'],
  api: [
    'adapters',
    'agents',
    'catalog',
    'config',
    'media',
    'missions',
    'protocol',
    'retention',
    'store',
    'telemetry',
    'tools',
  ],
};
const folders = [...Object.keys(arrows), 'protocol', 'client', 'ai-sdk', 'cli'];
// Narrower than a folder: the configuration compiles missions' cron and input checks.
const exceptions = {
  config: ['!../missions/cron.js', '!../missions/input.js'],
  work: ['../store/*', '!../store/wakeups.js'],
};

export default tseslint.config(
  // web/ and examples/ are browser apps with their own tsconfig (type-checked by their build),
  // as is the test that renders the web app's components (web/tsconfig.json includes it).
  {
    ignores: [
      'test/web-cards.test.ts',
      'dist/**',
      'node_modules/**',
      'coverage/**',
      'web/**',
      'examples/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  ...tseslint.configs.recommendedTypeChecked,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver': { node: { extensions: ['.ts', '.js'] } },
      'import-x/ignore': ['node_modules'],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false } },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/require-await': 'off',
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    // Tests, the benchmark and the soak read untyped JSON off the wire.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  // The architecture's boundaries (docs/architecture.md, "Folders and arrows"): each folder
  // of src/ imports only the folders listed here, besides the shared leaves at the top of
  // src/ (errors, ids, log, metrics). api and runtime meet only in the database, and in one
  // process through store's `SessionHandoff` interface, which the worker implements.
  ...Object.entries(arrows).map(([folder, allowed]) => ({
    files: [`src/${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: folders
            .filter((other) => other !== folder && !allowed.includes(other))
            .flatMap((other) => [`../${other}/**`, `../../${other}/**`, `../../../${other}/**`])
            .concat(exceptions[folder] ?? []),
        },
      ],
    },
  })),
  {
    files: ['src/protocol/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['../*', 'node:*'] }] },
  },
  {
    // parley/ai-sdk runs in browsers too: the client SDK and `ai`'s types, nothing else.
    files: ['src/ai-sdk/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            '../api/*',
            '../store/*',
            '../runtime/*',
            '../cli/*',
            '../config/*',
            '../providers/*',
            '../tools/*',
            'node:*',
            'fastify',
            'pg',
            '@electric-sql/*',
          ],
        },
      ],
    },
  },
  {
    files: ['src/client/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        // The wire types in src/protocol/ are shared on purpose; nothing else server-side.
        {
          patterns: [
            '../*',
            '!../protocol',
            '!../protocol/*',
            'node:*',
            'fastify',
            'pg',
            '@electric-sql/*',
          ],
        },
      ],
    },
  },
);
