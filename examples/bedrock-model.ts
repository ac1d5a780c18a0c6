import { BedrockModelClient } from '../lib/adapters/bedrock/bedrock-model-client.ts';
import type { ModelClient } from '../lib/ports/model-client.ts';

/** Bedrock when `BATON_BEDROCK_MODEL_ID` names a model; otherwise the examples' scripted model. */
export function bedrockModelFromEnv(env: NodeJS.ProcessEnv = process.env): ModelClient | undefined {
  const modelId = env.BATON_BEDROCK_MODEL_ID;
  if (!modelId) return undefined;
  return new BedrockModelClient({ modelId, maxDurationMs: Number(env.BATON_MODEL_MAX_DURATION_MS ?? 60_000) });
}
