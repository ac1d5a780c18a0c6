import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { longHaul } from '../examples/long-haul/agent.ts';
import { createDocumentClient } from '../lib/adapters/aws-clients.ts';
import { toolInputSchema } from '../lib/agent/define-tool.ts';
import type { ChatMessage } from '../lib/ports/model-client.ts';
import { type BenchDynamoDb, meteredClient } from './in-process-runtime.ts';
import { type SessionCost, windowCosts } from './journal-cost.ts';
import { diffTotals, type MeterTotals } from './request-meter.ts';

/**
 * The pattern Baton is measured against: seed 000's RedisAgentSessionStore (and most agent
 * checkpointers) serialize the whole session and save it under one key at every observable
 * boundary — after every model call and every tool result. Here the same long-haul loop does
 * exactly that, on the same DynamoDB Local, through the same request meter.
 */
export async function measureFullRewrite(options: {
  db: BenchDynamoDb;
  toolCalls: number;
  payloadBytes: number;
  windowsAt: readonly number[];
  windowSteps: number;
}): Promise<SessionCost> {
  const { client, meter } = meteredClient(options.db);
  const documents = createDocumentClient({ region: options.db.region }, client);
  const conversationId = `baseline-${Date.now()}`;
  const input = { steps: options.toolCalls, payloadBytes: options.payloadBytes, stepMs: 0 };
  const messages: ChatMessage[] = [{ role: 'user', content: [{ type: 'text', text: JSON.stringify(input) }] }];
  const tools = longHaul.tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: toolInputSchema(t),
  }));
  const signal = new AbortController().signal;
  const cumulative: MeterTotals[] = [];
  let toolRuns = 0;

  // SaveSessionAsync: the key is agent + conversation, the value the whole serialized session.
  const saveSession = async () => {
    await documents.send(
      new PutCommand({
        TableName: options.db.table,
        Item: {
          pk: `BASELINE#${longHaul.name}#${conversationId}`,
          sk: 'SESSION',
          session: JSON.stringify({ agent: longHaul.name, conversationId, messages }),
        },
      }),
    );
    cumulative.push(meter.snapshot());
  };

  const before = meter.snapshot();
  for (;;) {
    const response = await longHaul.model.converse({ system: longHaul.instructions, messages, tools }, signal);
    messages.push({
      role: 'assistant',
      content: [
        ...(response.text ? [{ type: 'text' as const, text: response.text }] : []),
        ...response.toolCalls.map((c) => ({
          type: 'toolUse' as const,
          toolCallId: c.id,
          name: c.name,
          input: c.input,
        })),
      ],
    });
    await saveSession();
    if (response.toolCalls.length === 0) break;
    for (const call of response.toolCalls) {
      const tool = longHaul.tools.find((t) => t.name === call.name)!;
      toolRuns++;
      const output = await tool.run(tool.input.parse(call.input), {
        signal,
        idempotencyKey: `${conversationId}:${call.id}`,
        sessionId: conversationId,
        log: () => {},
        progress: () => {},
        leg: { use: (_key, open) => open() },
      });
      messages.push({ role: 'user', content: [{ type: 'toolResult', toolCallId: call.id, ok: true, output }] });
      await saveSession();
    }
  }
  const totals = diffTotals(meter.snapshot(), before);
  const windows = windowCosts(cumulative, options.windowsAt, options.windowSteps);
  return { steps: cumulative.length, legs: 1, totals, windows, toolRuns, toolResults: toolRuns };
}
