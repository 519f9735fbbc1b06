// The migrations are .sql files next to the store code; tsc does not copy them.
import { cpSync } from 'node:fs';
cpSync('src/store/migrations', 'dist/store/migrations', { recursive: true });
