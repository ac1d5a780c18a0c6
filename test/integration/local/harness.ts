import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SendMessageCommand, type SendMessageCommandInput, type SQSClient } from '@aws-sdk/client-sqs';
import type { FixtureBody, RecordedInvocation } from '../../fixtures/handlers/recording-handler.ts';
import { waitFor } from '../../fixtures/wait-for.ts';

export const RECORDING_HANDLER = fileURLToPath(
  new URL('../../fixtures/handlers/recording-handler.ts', import.meta.url),
);

/** A fresh file for the fixture handler's record lines. */
export async function recordFile(): Promise<string> {
  return join(await mkdtemp(join(tmpdir(), 'baton-esm-')), 'records.jsonl');
}

export function readRecords(file: string): RecordedInvocation[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as RecordedInvocation);
}

/** The invocations that received the fixture message with this id, in order. */
export function recordsFor(file: string, id: string): RecordedInvocation[] {
  return readRecords(file).filter((line) => (JSON.parse(line.record.body) as FixtureBody).id === id);
}

/** Polls `probe` until it returns a value (not undefined), or fails naming `what` after the timeout. */
export function eventually<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  return waitFor(probe, { what, timeoutMs });
}

export async function sendFixture(
  sqs: SQSClient,
  queueUrl: string,
  body: FixtureBody,
  extra: Partial<SendMessageCommandInput> = {},
): Promise<void> {
  await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(body), ...extra }));
}
