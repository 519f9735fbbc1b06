import type { PlatformConfig } from '../../config/platformTypes.js';
import type { Logger } from '../../log.js';
import { discordClient } from './discord.js';
import { gchatClient } from './gchat.js';
import { slackClient } from './slack.js';
import { teamsClient } from './teams.js';
import { telegramClient } from './telegram.js';
import type { Env, PlatformClient } from './types.js';

/** The platform client of one configured adapter. */
export function platformClient(config: PlatformConfig, env: Env, log: Logger): PlatformClient {
  switch (config.platform) {
    case 'slack':
      return slackClient(config, env, log);
    case 'discord':
      return discordClient(config, env, log);
    case 'gchat':
      return gchatClient(config, env, log);
    case 'telegram':
      return telegramClient(config, env, log);
    case 'teams':
      return teamsClient(config, env, log);
  }
}
