import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** Commands that accept `ReturnConsumedCapacity`; the others (CreateTable, DescribeTable…) refuse it. */
const CAPACITY_COMMANDS = new Set([
  'GetItemCommand',
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'QueryCommand',
  'ScanCommand',
  'BatchGetItemCommand',
  'BatchWriteItemCommand',
  'TransactGetItemsCommand',
  'TransactWriteItemsCommand',
]);

const WRITE_COMMANDS = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'BatchWriteItemCommand',
  'TransactWriteItemsCommand',
]);

/** Running totals of the DynamoDB requests one client sent, as counted at the client. */
export interface MeterTotals {
  /** Write requests (Put, Update, Delete, batch and transaction writes), failed conditions included. */
  writes: number;
  /** Read requests (Get, Query, Scan, batch and transaction reads). */
  reads: number;
  /** Serialized bytes of the write requests' bodies. */
  writeBytes: number;
  /** Serialized bytes of the read requests' responses (Content-Length). */
  readBytes: number;
  /** Capacity units the service reported (ConsumedCapacity, TOTAL: table and indexes). */
  wcu: number;
  rcu: number;
}

/** What a read request asked for, from the session table's sort keys: the record, a turn, the journal, a snapshot. */
export type ReadTarget = 'record' | 'turn' | 'journal' | 'snapshot' | 'other';

/** One request, as counted at the client: the item it named, its bytes and the capacity reported. */
export interface RequestRecord {
  readonly command: string;
  readonly target: ReadTarget;
  /** Response bytes of a read, request bytes of a write. */
  readonly bytes: number;
  readonly units: number;
}

/**
 * The item a request names: a Get/UpdateItem's key, a PutItem's item, a Query's sort-key bound, a
 * BatchGetItem's keys (all of one kind, as the session store asks them) (marshalled input).
 */
export function readTarget(input: Record<string, unknown>): ReadTarget {
  const keyed = (input.Key ?? input.Item) as Record<string, unknown> | undefined;
  const batch = input.RequestItems as Record<string, { Keys?: Record<string, unknown>[] }> | undefined;
  const batchKeys = batch === undefined ? undefined : Object.values(batch).flatMap((r) => r.Keys ?? []);
  const text =
    keyed !== undefined
      ? JSON.stringify(keyed.sk ?? '')
      : batchKeys !== undefined
        ? JSON.stringify(batchKeys.map((k) => k.sk ?? ''))
        : JSON.stringify(input.ExpressionAttributeValues ?? {});
  if (input.IndexName !== undefined) return 'other';
  if (text.includes('"META"')) return 'record';
  if (text.includes('"SNAP#')) return 'snapshot';
  if (text.includes('"J#')) return 'journal';
  if (text.includes('"T#')) return 'turn';
  return 'other';
}

/** A request's kind as the bench tables show it: the command and the item it named, e.g. `PutItem:journal`. */
export const requestKind = (r: RequestRecord): string => `${r.command.replace('Command', '')}:${r.target}`;

/** How many requests of each kind `records` holds, most frequent first. */
export function countByKind(records: readonly RequestRecord[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const r of records) counts.set(requestKind(r), (counts.get(requestKind(r)) ?? 0) + 1);
  return Object.fromEntries([...counts].sort((a, b) => b[1] - a[1]));
}

export const zeroTotals = (): MeterTotals => ({ writes: 0, reads: 0, writeBytes: 0, readBytes: 0, wcu: 0, rcu: 0 });

/** The difference `after − before`, field by field. */
export function diffTotals(after: MeterTotals, before: MeterTotals): MeterTotals {
  return {
    writes: after.writes - before.writes,
    reads: after.reads - before.reads,
    writeBytes: after.writeBytes - before.writeBytes,
    readBytes: after.readBytes - before.readBytes,
    wcu: after.wcu - before.wcu,
    rcu: after.rcu - before.rcu,
  };
}

/** The SDK serializes JSON bodies to bytes (a Uint8Array); older paths leave a string. */
function bodyBytes(body: unknown): number {
  if (body instanceof Uint8Array) return body.byteLength;
  return typeof body === 'string' ? Buffer.byteLength(body) : 0;
}

interface Capacity {
  readonly CapacityUnits?: number;
  readonly ReadCapacityUnits?: number;
  readonly WriteCapacityUnits?: number;
}

/**
 * Counts every DynamoDB request a client sends: its serialized size and the capacity DynamoDB
 * reports. Installed as SDK middleware, so the figures come from the wire, not from estimates.
 * @example const meter = new RequestMeter(); meter.install(dynamodbClient); ...; meter.snapshot()
 */
export class RequestMeter {
  #totals = zeroTotals();
  #enabled = true;
  readonly #reads: RequestRecord[] = [];
  readonly #writes: RequestRecord[] = [];

  /** Every write request counted so far, in order, with the item it names (a transaction: 'other'). */
  get writeCount(): number {
    return this.#writes.length;
  }

  writesSince(count: number): readonly RequestRecord[] {
    return this.#writes.slice(count);
  }

  /** Every read request counted so far, in order: `readsSince(n)` gives those after the first n. */
  get readCount(): number {
    return this.#reads.length;
  }

  readsSince(count: number): readonly RequestRecord[] {
    return this.#reads.slice(count);
  }

  /** A copy of the running totals. */
  snapshot(): MeterTotals {
    return { ...this.#totals };
  }

  /** Stops counting while `fn` runs (bench set-up that is not part of a figure). */
  async paused<T>(fn: () => Promise<T>): Promise<T> {
    this.#enabled = false;
    try {
      return await fn();
    } finally {
      this.#enabled = true;
    }
  }

  /** Adds the two middlewares to `client` (the document client shares its stack). */
  install(client: DynamoDBClient): void {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as Record<string, unknown>;
        if (CAPACITY_COMMANDS.has(context.commandName ?? '')) input.ReturnConsumedCapacity = 'TOTAL';
        return next(args);
      },
      // Before the serializer turns the input into the request body, after the document client marshalled it.
      { step: 'serialize', priority: 'high', name: 'benchReturnConsumedCapacity' },
    );
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const command = context.commandName ?? '';
        const request = args.request as { body?: unknown };
        const requestBytes = bodyBytes(request.body);
        const target = readTarget(args.input as Record<string, unknown>);
        let result: Awaited<ReturnType<typeof next>>;
        try {
          result = await next(args);
        } catch (error) {
          // A failed condition still cost a write (DynamoDB charges it).
          this.#record(command, target, requestBytes, 0, undefined);
          throw error;
        }
        const response = result.response as { headers?: Record<string, string> };
        const responseBytes = Number(response.headers?.['content-length'] ?? 0);
        const output = result.output as { ConsumedCapacity?: Capacity | Capacity[] };
        this.#record(command, target, requestBytes, responseBytes, output.ConsumedCapacity);
        return result;
      },
      { step: 'build', name: 'benchRequestMeter' },
    );
  }

  #record(
    command: string,
    target: ReadTarget,
    requestBytes: number,
    responseBytes: number,
    capacity: Capacity | Capacity[] | undefined,
  ) {
    if (!this.#enabled || !CAPACITY_COMMANDS.has(command)) return;
    const units = (Array.isArray(capacity) ? capacity : capacity ? [capacity] : []).reduce(
      (sum, c) => sum + (c.CapacityUnits ?? 0),
      0,
    );
    if (WRITE_COMMANDS.has(command)) {
      this.#totals.writes++;
      this.#totals.writeBytes += requestBytes;
      this.#totals.wcu += units;
      this.#writes.push({ command, target, bytes: requestBytes, units });
    } else {
      this.#totals.reads++;
      this.#totals.readBytes += responseBytes;
      this.#totals.rcu += units;
      this.#reads.push({ command, target, bytes: responseBytes, units });
    }
  }
}
