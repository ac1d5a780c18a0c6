import { BedrockModelClient, type ModelClient } from '@baton-run/baton';

/**
 * Bedrock when `BATON_BEDROCK_MODEL_ID` names a model; otherwise undefined (the examples then use
 * their scripted model). The client loads the Bedrock SDK at its first call, so deployments that
 * run the scripted model never load it or open a connection.
 */
export function bedrockModelFromEnv(env: NodeJS.ProcessEnv = process.env): ModelClient | undefined {
  const modelId = env.BATON_BEDROCK_MODEL_ID;
  if (!modelId) return undefined;
  return new BedrockModelClient({ modelId, maxDurationMs: Number(env.BATON_MODEL_MAX_DURATION_MS ?? 60_000) });
}
