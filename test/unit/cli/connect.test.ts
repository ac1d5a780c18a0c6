import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveTarget } from '../../../lib/cli/connect.ts';
import { HttpBatonClient } from '../../../lib/client/http-baton-client.ts';
import { type LocalStackConfig, writeLocalStackConfig } from '../../../lib/local/local-config.ts';

const dir = mkdtempSync(join(tmpdir(), 'baton-connect-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const queue = { url: 'http://127.0.0.1:1/q', arn: 'arn:q' };
const localJson = (supervisorPid: number): LocalStackConfig => ({
  version: 1,
  region: 'us-east-1',
  endpoints: { dynamodb: 'http://127.0.0.1:1', sqs: 'http://127.0.0.1:1', s3: 'http://127.0.0.1:1' },
  prefix: 'baton',
  resources: {
    table: 'baton-sessions',
    bucket: 'baton-payloads',
    queues: { tickets: queue, work: queue, results: queue, ticketsDlq: queue, workDlq: queue },
  } as unknown as LocalStackConfig['resources'],
  functionTimeoutS: 60,
  supervisorPid,
  workers: [],
  functions: {},
  ledger: 'ledger.jsonl',
  startedAt: new Date(0).toISOString(),
});

describe('finding the stack to talk to', () => {
  it('says the local stack is not running when the baton dev that wrote local.json has exited', async () => {
    const exited = spawnSync(process.execPath, ['-e', '']).pid;
    writeLocalStackConfig(join(dir, 'stale'), localJson(exited));

    await expect(resolveTarget({ stateDir: join(dir, 'stale') })).rejects.toThrow(
      `local.json is not running (its baton dev, pid ${exited}, has exited): start it again with \`baton dev\``,
    );
  });

  it('takes the local stack of a live baton dev', async () => {
    writeLocalStackConfig(join(dir, 'live'), localJson(process.pid));

    await expect(resolveTarget({ stateDir: join(dir, 'live') })).resolves.toMatchObject({ table: 'baton-sessions' });
  });

  it('names the API address and the cause when the API cannot be reached, not only "fetch failed"', async () => {
    const refused = async () => {
      throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:1') });
    };
    const client = new HttpBatonClient({ baseUrl: 'http://127.0.0.1:1/api', fetch: refused });

    await expect(client.status('S-1')).rejects.toThrow(
      'cannot reach the Baton API at http://127.0.0.1:1/api (GET http://127.0.0.1:1/api/sessions/S-1): connect ECONNREFUSED 127.0.0.1:1',
    );
  });
});
