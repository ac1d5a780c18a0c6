/**
 * `@baton-run/baton`: defining agents and tools, the models, the typed client, and the queue messages.
 * Handler factories are in `@baton-run/baton/aws`, the CDK construct in `@baton-run/baton/cdk`, MCP tools in
 * `@baton-run/baton/mcp`, AI SDK models in `@baton-run/baton/ai-sdk`, the test harness in `@baton-run/baton/testing`.
 */
export {
  BedrockModelClient,
  type BedrockModelClientOptions,
} from './adapters/bedrock/bedrock-model-client.ts';
export {
  type AgentDefinition,
  type AgentLimits,
  type AgentRegistry,
  agentRegistry,
  DEFAULT_LIMITS,
  type DefineAgentOptions,
  defineAgent,
} from './agent/define-agent.ts';
export {
  defineSchedule,
  nextFires,
  type ScheduleDefinition,
  type ScheduleOptions,
} from './agent/define-schedule.ts';
export {
  type AnyTool,
  defineTool,
  type ReconcileVerdict,
  type ToolContext,
  type ToolDefinition,
} from './agent/define-tool.ts';
export type { RetryPolicy } from './agent/retry-policy.ts';
export {
  type ScriptedModelOptions,
  type ScriptReply,
  scriptedModel,
  toolResults,
  transcriptStats,
} from './agent/scripted-model.ts';
export { type ParkRequest, parkFor, parkUntil, waitTool } from './agent/timer.ts';
export { asText } from './agent/transcript.ts';
export {
  BatonClient,
  type BatonClientDeps,
  type CancelResult,
  type EventsOptions,
  type FollowEvent,
  type ModelTextEvent,
  type SessionEvent,
  type SessionStatus,
  type SubmitRequest,
  type Submitted,
} from './client/baton-client.ts';
export { BatonError, InvalidInputError, StepError } from './core/errors.ts';
export type { ToolCall } from './core/journal.ts';
export {
  ATTR_RESULT_ID,
  ATTR_TRACEPARENT,
  BlobRef,
  INLINE_PAYLOAD_LIMIT_BYTES,
  Kick,
  MAX_MESSAGE_BYTES,
  Result,
  SessionRef,
  Ticket,
  TicketId,
  Usage,
} from './core/messages.ts';
export { TaskTool } from './core/tasks.ts';
export { ToolEffect } from './core/vocabulary.ts';
export { type Clock, systemClock } from './ports/clock.ts';
export type {
  AssistantContent,
  ChatMessage,
  ModelClient,
  ModelRequest,
  ModelResponse,
  ModelStreamSink,
  ToolSpec,
  UserContent,
} from './ports/model-client.ts';
export { type AbortWhy, LegAborted } from './runtime/leg/leg-signals.ts';
