export { buildApp } from './api/app.js';
export { loadConfig, compileConfig } from './config/load.js';
export type { Config } from './config/types.js';
export { startProcess } from './cli/start.js';
export { ParleyError, errorCodes } from './errors.js';
