import { createDocumentClient } from '../lib/adapters/aws-clients.ts';
import { DynamoDbLiveText } from '../lib/adapters/dynamodb/dynamodb-live-text.ts';
import { ManualClock } from '../lib/adapters/memory/manual-clock.ts';
import type { LiveTextStore } from '../lib/ports/live-text.ts';
import { DEFAULT_LIVE_TEXT_POLICY, liveTextWriter } from '../lib/runtime/live-text-writer.ts';
import { type BenchDynamoDb, meteredClient } from './in-process-runtime.ts';
import { diffTotals } from './request-meter.ts';

/** The cost of one streamed response's live text, by its length. */
export interface LiveTextCost {
  /** Model output tokens (4 characters each), streamed at `tokensPerSecond`. */
  readonly tokens: number;
  readonly streamSeconds: number;
  readonly writes: number;
  readonly wcu: number;
  readonly writeBytes: number;
  /** Characters a follower saw before the entry (the rest came with the model entry). */
  readonly liveChars: number;
  readonly chars: number;
  /** One follower poll that reads the whole response's chunks so far (a late joiner): RCU. */
  readonly fullReadRcu: number;
}

const CHARS_PER_TOKEN = 4;

/**
 * Streams responses of several lengths through the live text writer onto DynamoDB Local, on
 * virtual time (a token every 1000/tokensPerSecond ms), and counts the writes at the client.
 */
export async function measureLiveTextCost(options: {
  db: BenchDynamoDb;
  tokens: readonly number[];
  tokensPerSecond: number;
}): Promise<LiveTextCost[]> {
  const { client, meter } = meteredClient(options.db);
  const live = new DynamoDbLiveText({
    client: createDocumentClient({ region: options.db.region }, client),
    table: options.db.table,
  });
  const costs: LiveTextCost[] = [];
  for (const tokens of options.tokens) {
    const clock = new ManualClock();
    const session = { tenant: 'bench', agent: 'stream', id: `s-${tokens}-${Date.now()}` };
    // Virtual time with real writes: wait for each write before time moves on.
    let inFlight: Promise<void> = Promise.resolve();
    const tracked: LiveTextStore = {
      put: (key, chunk, expiresAt) => {
        inFlight = live.put(key, chunk, expiresAt);
        return inFlight;
      },
      read: (key, seq, o) => live.read(key, seq, o),
    };
    const writer = liveTextWriter({ store: tracked, clock, session, seq: 2, turnId: 't' });
    const before = meter.snapshot();
    const stepMs = 1000 / options.tokensPerSecond;
    for (let i = 0; i < tokens; i++) {
      writer.text('tok '.slice(0, CHARS_PER_TOKEN));
      await inFlight;
      clock.advance(stepMs);
      await inFlight;
    }
    await writer.close();
    const cost = diffTotals(meter.snapshot(), before);
    const readBefore = meter.snapshot();
    const chunks = await live.read(session, 2, { now: clock.now() });
    const read = diffTotals(meter.snapshot(), readBefore);
    costs.push({
      tokens,
      streamSeconds: (tokens * stepMs) / 1000,
      writes: cost.writes,
      wcu: cost.wcu,
      writeBytes: cost.writeBytes,
      liveChars: chunks.reduce((n, c) => n + c.text.length, 0),
      chars: tokens * CHARS_PER_TOKEN,
      fullReadRcu: read.rcu,
    });
  }
  return costs;
}

/** The policy the figures were measured with, for the report. */
export const LIVE_TEXT_POLICY = DEFAULT_LIVE_TEXT_POLICY;
