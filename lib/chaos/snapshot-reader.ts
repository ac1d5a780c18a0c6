import { existsSync, readFileSync } from 'node:fs';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { LedgerCall, PublishedResult, RawEntry, RawSession, RawTurn } from './chaos-snapshot.ts';

type Item = Record<string, unknown>;

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);
const json = (value: unknown): Record<string, unknown> | undefined => {
  if (typeof value !== 'string') return undefined;
  try {
    const parsed = JSON.parse(value) as unknown;
    return parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
};

/**
 * Reads every item of the session table with a plain Scan (strongly consistent) and groups it by
 * session. No store adapter, no fold: the checker sees what DynamoDB holds.
 */
export async function readSessions(documents: DynamoDBDocumentClient, table: string): Promise<Map<string, RawSession>> {
  const byPk = new Map<string, { meta?: Item; turns: Item[]; journal: Item[] }>();
  let startKey: Item | undefined;
  do {
    const page = await documents.send(
      new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: startKey }),
    );
    for (const item of page.Items ?? []) {
      const pk = str(item.pk);
      const sk = str(item.sk);
      if (pk === undefined || sk === undefined) continue;
      const group = byPk.get(pk) ?? { turns: [], journal: [] };
      byPk.set(pk, group);
      if (sk === 'META') group.meta = item;
      else if (sk.startsWith('T#')) group.turns.push(item);
      else if (sk.startsWith('J#')) group.journal.push(item);
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey !== undefined);

  const sessions = new Map<string, RawSession>();
  for (const [pk, group] of byPk) {
    const match = /^S#([^#]+)#([^#]+)#(.+)$/.exec(pk);
    if (!match) continue;
    const [, tenant = '', agent = '', sessionId = ''] = match;
    const meta = group.meta;
    const journal: RawEntry[] = group.journal
      .map((item) => ({
        seq: num(item.seq) ?? -1,
        kind: str(item.kind) ?? '?',
        epoch: num(item.epoch) ?? -1,
        writeId: str(item.writeId) ?? '',
        turnId: str(item.turnId),
        data: json(item.data),
      }))
      .sort((a, b) => a.seq - b.seq);
    const turns: RawTurn[] = group.turns.map((item) => {
      const outcome = json(item.outcome);
      return {
        turnId: str(item.turnId) ?? '',
        outcome:
          outcome === undefined && item.outcomeBlob === undefined
            ? undefined
            : { status: str(outcome?.status) ?? 'unknown', error: str(outcome?.error) },
      };
    });
    sessions.set(sessionId, {
      pk,
      tenant,
      agent,
      sessionId,
      record:
        meta === undefined
          ? undefined
          : {
              state: str(meta.state) ?? '?',
              owner: str(meta.owner),
              until: num(meta.until),
              epoch: num(meta.epoch) ?? 0,
              sweepAt: num(meta.sweepAt),
              legs: num(meta.legs) ?? 0,
              recoveries: num(meta.recoveries) ?? 0,
              activeTurnId: str(meta.activeTurnId),
            },
      turns,
      journal,
    });
  }
  return sessions;
}

/** Receives (and deletes) everything on the results queue right now. */
export async function drainResults(sqs: SQSClient, queueUrl: string): Promise<PublishedResult[]> {
  const results: PublishedResult[] = [];
  let emptyPolls = 0;
  while (emptyPolls < 2) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: emptyPolls === 0 ? 0 : 1,
      }),
    );
    if (Messages.length === 0) {
      emptyPolls++;
      continue;
    }
    emptyPolls = 0;
    for (const message of Messages) {
      const body = json(message.Body);
      results.push({
        sessionId: str(body?.sessionId) ?? '',
        turnId: str(body?.turnId) ?? '',
        ticketId: str(body?.ticketId) ?? '',
        status: str(body?.status) ?? '',
        error: str(body?.error),
      });
    }
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
      }),
    );
  }
  return results;
}

/** The simulated services' ledger (one JSON line per call received). */
export function readLedgerFile(path: string): LedgerCall[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as LedgerCall];
      } catch {
        return []; // a line cut short by a SIGKILL mid-write
      }
    });
}
