import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import type { Db } from '../store/db.js';
import type { Wakeups } from '../store/wakeups.js';

export interface ApiDeps {
  db: Db;
  wakeups: Wakeups;
  config: Config;
  log: Logger;
  /** Are the configured providers usable? For /readyz. */
  providersReady: () => boolean;
  /** The built web app's folder (default: dist/web of this package). */
  webDir?: string | undefined;
}
