import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClients } from '../../../lib/local/aws-clients.ts';
import { readLocalStackConfig } from '../../../lib/local/local-config.ts';
import { type LocalStack, startLocalStack } from '../../../lib/local/local-stack.ts';
import { RECORD_FILE_ENV, SCHEDULE_FILE_ENV } from '../../fixtures/handlers/recording-handler.ts';
import { eventually, RECORDING_HANDLER, recordFile, recordsFor, sendFixture } from './harness.ts';

const { endpoints, region } = inject('baton');

describe('startLocalStack', () => {
  const { sqs } = localClients(endpoints, region);
  let stack: LocalStack;
  let stateDir: string;
  let records: string;
  let schedules: string;

  beforeAll(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'baton-state-'));
    records = await recordFile();
    schedules = `${records}.schedules`;
    stack = await startLocalStack({
      emulators: { region, endpoints },
      prefix: `stack-${randomUUID().slice(0, 8)}`,
      workers: 2,
      functionTimeoutS: 2,
      waitTimeSeconds: 1,
      sweepEveryMs: 500,
      stateDir,
      // The fixture stands in for intake, step and the sweeper.
      functions: {
        intake: RECORDING_HANDLER,
        step: RECORDING_HANDLER,
        sweeper: { module: RECORDING_HANDLER, export: 'scheduled' },
      },
      handlerEnv: { [RECORD_FILE_ENV]: records, [SCHEDULE_FILE_ENV]: schedules },
      log: () => {},
    });
  });

  afterAll(async () => {
    await stack?.stop();
    sqs.destroy();
  });

  it('writes local.json with the resources and the live worker pids', () => {
    // Act
    const written = readLocalStackConfig(stateDir);

    // Assert
    expect(written?.resources).toEqual(stack.resources);
    expect(written?.endpoints).toEqual(endpoints);
    expect(written?.workers.map((worker) => worker.pid)).toEqual(
      stack.supervisor.workers().map((worker) => worker.pid),
    );
    expect(written?.ledger).toBe(join(stateDir, 'ledger.jsonl'));
  });

  it('hosts intake on the tickets queue with the resource names in its environment', async () => {
    // Arrange
    const id = randomUUID();

    // Act
    await sendFixture(sqs, stack.resources.queues.tickets.url, { id, action: 'ok' });
    const [delivery] = await eventually(() => {
      const found = recordsFor(records, id);
      return found.length > 0 ? found : undefined;
    }, 'a delivery to the recording handler');

    // Assert
    expect(delivery?.record.eventSourceARN).toBe(stack.resources.queues.tickets.arn);
    expect(delivery?.table).toBe(stack.resources.table);
  });

  it('runs the sweeper on its schedule in one worker only', async () => {
    // Act
    const lines = await eventually(() => {
      if (!existsSync(schedules)) return undefined;
      const found = readFileSync(schedules, 'utf8').trim().split('\n');
      return found.length >= 2 ? found.map((line) => JSON.parse(line) as { pid: number; event: object }) : undefined;
    }, 'two scheduled invocations');

    // Assert
    expect(new Set(lines.map((line) => line.pid)).size).toBe(1);
    expect(lines[0]?.event).toMatchObject({ source: 'aws.events', 'detail-type': 'Scheduled Event' });
  });

  it('rewrites local.json when a worker is replaced, and removes it on stop', async () => {
    // Arrange
    const victim = stack.supervisor.workers()[1];
    if (victim === undefined) throw new Error('no worker');

    // Act
    process.kill(victim.pid, 'SIGKILL');
    const rewritten = await eventually(() => {
      const pids = readLocalStackConfig(stateDir)?.workers.map((worker) => worker.pid) ?? [];
      return pids.includes(victim.pid) || pids.length < 2 ? undefined : pids;
    }, 'local.json to list the replacement worker');
    await stack.stop();

    // Assert
    expect(rewritten).toEqual(stack.supervisor.workers().map((worker) => worker.pid));
    expect(readLocalStackConfig(stateDir)).toBeUndefined();
    for (const pid of rewritten) expect(isAlive(pid)).toBe(false);
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
