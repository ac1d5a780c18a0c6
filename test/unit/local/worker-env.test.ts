import { describe, expect, it } from 'vitest';
import { workerEnvironment } from '../../../lib/local/worker-env.ts';

describe('the environment of local workers', () => {
  const developer = {
    PATH: '/usr/bin',
    HOME: '/home/dev',
    LANG: 'en_GB.UTF-8',
    AWS_ACCESS_KEY_ID: 'AKIAREALKEY',
    AWS_SECRET_ACCESS_KEY: 'real-secret',
    AWS_SESSION_TOKEN: 'real-session',
    AWS_PROFILE: 'production',
    BATON_BEDROCK_MODEL_ID: 'eu.anthropic.claude-sonnet',
    GITHUB_TOKEN: 'ghp_secret',
    BATON_FAULTS: 'dynamoThrottle=0.05',
    BATON_FAILPOINTS_FILE: 'crash-points.json',
    POWERTOOLS_LOG_LEVEL: 'DEBUG',
  };
  const stack = { AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', BATON_TABLE: 'dev-sessions' };

  it('keeps what a process needs, the fault and crash-point switches and the stack’s own settings, and none of the developer’s credentials or model ids', () => {
    const env = workerEnvironment(developer, stack);

    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/dev',
      LANG: 'en_GB.UTF-8',
      BATON_FAULTS: 'dynamoThrottle=0.05',
      BATON_FAILPOINTS_FILE: 'crash-points.json',
      POWERTOOLS_LOG_LEVEL: 'DEBUG',
      ...stack,
    });
  });

  it('passes on the variables a developer names in BATON_WORKER_ENV, and only those', () => {
    const env = workerEnvironment({ ...developer, BATON_WORKER_ENV: 'BATON_BEDROCK_MODEL_ID, AWS_PROFILE' }, stack);

    expect(env.BATON_BEDROCK_MODEL_ID).toBe('eu.anthropic.claude-sonnet');
    expect(env.AWS_PROFILE).toBe('production');
    expect(env.AWS_SESSION_TOKEN).toBeUndefined();
    expect(env.GITHUB_TOKEN).toBeUndefined();
  });
});
