import { describe, expect, it } from 'vitest';
import { clientKey, principalFor } from '../src/adapters/identity.js';
import { platformText } from '../src/adapters/text.js';
import { compileConfig, ConfigError } from '../src/config/load.js';

const slack = {
  tenant: 'acme',
  signing_secret_env: 'SLACK_SIGNING_SECRET',
  bot_token_env: 'SLACK_BOT_TOKEN',
  users: { U1: { user: 'alice', roles: ['reviewer'] } },
  default_roles: ['viewer'],
};
const env = { SLACK_SIGNING_SECRET: 'signing', SLACK_BOT_TOKEN: 'xoxb-secret-token' };

function failure(file: Record<string, unknown>, variables: Record<string, string> = env): string {
  try {
    compileConfig(file, variables);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('adapters and webhooks configuration', () => {
  it('compiles an adapter with its tenant, agent, users and defaults', () => {
    const config = compileConfig({ adapters: { slack } }, env);
    expect(config.adapters.slack).toMatchObject({
      platform: 'slack',
      tenant: 'acme',
      agent: 'default',
      defaultRoles: ['viewer'],
      editIntervalMs: 1000,
      nativeStreaming: true,
    });
    expect(principalFor(config.adapters.slack!, 'U1')).toEqual({
      tenant: 'acme',
      user: 'alice',
      roles: ['reviewer'],
      operator: false,
    });
    expect(principalFor(config.adapters.slack!, 'U9')).toEqual({
      tenant: 'acme',
      user: 'slack:U9',
      roles: ['viewer'],
      operator: false,
    });
    expect(principalFor(config.adapters.slack!, 'constructor').user).toBe('slack:constructor');
  });

  it('refuses, naming the key and never the value: an unset variable, an unknown agent, a secret in the file', () => {
    const unset = failure({ adapters: { slack } }, { SLACK_SIGNING_SECRET: 'signing' });
    expect(unset).toContain('adapters.slack.bot_token_env');
    expect(unset).toContain('SLACK_BOT_TOKEN');
    expect(failure({ adapters: { slack: { ...slack, agent: 'nobody' } } })).toContain(
      'adapters.slack.agent',
    );
    expect(failure({ adapters: { slack: { ...slack, bot_token: 'xoxb-1' } } })).toContain(
      'adapters.slack',
    );
    expect(failure({ adapters: { irc: {} } })).toContain('adapters');
    const gchat = failure(
      { adapters: { gchat: { tenant: 't', credentials_env: 'GCHAT' } } },
      { GCHAT: '{"client_email":"a","private_key":"b"}' },
    );
    expect(gchat).toContain('project_number or endpoint_url');
    const notJson = failure(
      { adapters: { gchat: { tenant: 't', credentials_env: 'GCHAT', project_number: '1' } } },
      { GCHAT: 'not json at all' },
    );
    expect(notJson).toContain('adapters.gchat.credentials_env');
    expect(notJson).not.toContain('not json at all');
    expect(
      failure({
        adapters: {
          discord: { tenant: 't', public_key: 'xyz', application_id: '1', bot_token_env: 'D' },
        },
      }),
    ).toContain('adapters.discord.public_key');
  });

  it('requires a Standard Webhooks secret and known event types for webhooks', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const hook = {
      url: 'https://crm.example.com/hooks',
      events: ['done'],
      secret_env: 'CRM',
      tenants: ['acme'],
    };
    const config = compileConfig({ webhooks: { crm: hook } }, { CRM: secret });
    expect(config.webhooks.crm).toMatchObject({ name: 'crm', events: ['done'], maxAttempts: 8 });
    const weak = failure({ webhooks: { crm: hook } }, { CRM: 'hunter2' });
    expect(weak).toContain('webhooks.crm.secret_env');
    expect(weak).not.toContain('hunter2');
    expect(
      failure({ webhooks: { crm: { ...hook, events: ['finished'] } } }, { CRM: secret }),
    ).toContain('webhooks.crm.events');
    expect(failure({ webhooks: { crm: { ...hook, url: 'ftp://x' } } }, { CRM: secret })).toContain(
      'webhooks.crm.url',
    );
  });

  it('requires the tenants a webhook belongs to: a list, or "*" for every tenant', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const hook = { url: 'https://crm.example.com/hooks', events: ['done'], secret_env: 'CRM' };
    expect(failure({ webhooks: { crm: hook } }, { CRM: secret })).toContain(
      'webhooks.crm.tenants: required',
    );
    expect(failure({ webhooks: { crm: { ...hook, tenants: [] } } }, { CRM: secret })).toContain(
      'webhooks.crm.tenants',
    );
    expect(failure({ webhooks: { crm: { ...hook, tenants: ['*'] } } }, { CRM: secret })).toContain(
      'webhooks.crm.tenants',
    );
    const everyone = compileConfig(
      { webhooks: { crm: { ...hook, tenants: '*' } } },
      { CRM: secret },
    );
    expect(everyone.webhooks.crm?.tenants).toBe('*');
    const listed = compileConfig(
      { webhooks: { crm: { ...hook, tenants: ['acme', 'acme', 'globex'] } } },
      { CRM: secret },
    );
    expect(listed.webhooks.crm?.tenants).toEqual(['acme', 'globex']);
  });

  it("bounds a platform call's deadline by the sender's lease", () => {
    const defaults = compileConfig({ adapters: { slack } }, env);
    expect(defaults.adapters.slack).toMatchObject({ timeoutMs: 10_000, typingTimeoutMs: 2000 });
    const set = compileConfig(
      { adapters: { slack: { ...slack, timeout_ms: 4000, typing_timeout_ms: 500 } } },
      env,
    );
    expect(set.adapters.slack).toMatchObject({ timeoutMs: 4000, typingTimeoutMs: 500 });
    expect(
      failure(
        { runtime: { lease_ttl_ms: 6000 }, adapters: { slack: { ...slack, timeout_ms: 5000 } } },
        env,
      ),
    ).toContain('adapters.slack.timeout_ms');
  });
});

describe('platform identifiers and text', () => {
  it('makes turn ids of platform message ids: allowed characters, 128 at most, stable, distinct', () => {
    const slackKey = clientKey(['slack', 'C123', '1712345678.000100']);
    expect(slackKey).toMatch(/^slack_C123_1712345678_000100_[0-9a-f]{12}$/);
    expect(clientKey(['slack', 'C123', '1712345678.000100'])).toBe(slackKey);
    expect(clientKey(['slack', 'C123', '1712345678_000100'])).not.toBe(slackKey);
    expect(clientKey(['discord', 'G1', '123456789012345678'])).toBe(
      'discord_G1_123456789012345678',
    );
    const long = clientKey(['teams', 'a'.repeat(300), 'x']);
    expect(long.length).toBeLessThanOrEqual(128);
    expect(long).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('repairs text a database would refuse and bounds its size', () => {
    expect(platformText('a\u0000b', 100)).toBe('a\uFFFDb');
    expect(platformText('x\uD800y', 100)).toBe('x\uFFFDy');
    const cut = platformText('é'.repeat(100), 51);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(51);
    expect(cut.endsWith(' […]')).toBe(true);
    expect(cut).not.toContain('\uFFFD');
  });
});
