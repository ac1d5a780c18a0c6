/**
 * `@baton-run/baton/testing`: run your agents through the real runtime in milliseconds, without the local
 * stack — in-memory twins of DynamoDB and SQS, a manual clock (`advance('2h')`), model and tool
 * mocks, and crashes the runtime must recover from.
 * @example
 * const baton = createTestBaton({ agents: [greeter] });
 * baton.mockTool('greeter', 'greet', ({ who }: { who: string }) => `Hi, ${who}`);
 * const run = await baton.start('greeter', { who: 'Ada' });
 * assert.equal(await run.output(), 'Hi, Ada');
 */
export type { ToolCallRecord, ToolMock, ToolMockImpl } from './agent-doubles.ts';
export { type Duration, durationMs } from './duration.ts';
export type { CrashHandle, CrashPoint } from './leg-tracker.ts';
export type { MockReply, MockToolCall, ModelMock, ModelScript } from './model-mock.ts';
export { type RanTwice, RanTwiceError } from './step-ledger.ts';
export {
  createTestBaton,
  LegThrewError,
  type SendToOptions,
  type StartOptions,
  TestBaton,
  type TestBatonOptions,
} from './test-baton.ts';
export { TestRun } from './test-run.ts';
