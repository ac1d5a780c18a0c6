import type { SQSClient } from '@aws-sdk/client-sqs';
import { type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { readJsonLines } from '../local/json-lines.ts';
import { drainQueue } from '../local/receive-messages.ts';
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
              conversation: meta.conversation === true,
              parentId: str(meta.parentId),
              pendingVersion: num(meta.pendingVersion),
              seenVersion: num(meta.seenVersion),
            },
      turns,
      journal,
    });
  }
  return sessions;
}

/** Receives (and deletes) everything on the results queue right now. */
export async function drainResults(sqs: SQSClient, queueUrl: string): Promise<PublishedResult[]> {
  return (await drainQueue(sqs, queueUrl)).map((message) => {
    const body = json(message.body);
    return {
      sessionId: str(body?.sessionId) ?? '',
      turnId: str(body?.turnId) ?? '',
      ticketId: str(body?.ticketId) ?? '',
      status: str(body?.status) ?? '',
      error: str(body?.error),
    };
  });
}

/** The simulated services' ledger (one JSON line per call received). */
export function readLedgerFile(path: string): LedgerCall[] {
  return readJsonLines<LedgerCall>(path);
}
