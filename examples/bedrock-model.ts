import { BedrockModelClient, type ModelClient } from '@baton-run/baton';

/**
 * Bedrock when `BATON_BEDROCK_MODEL_ID` names a model; otherwise undefined (the examples then use
 * their scripted model). The client is built on first use, so deployments that run the scripted
 * model never open a Bedrock connection.
 */
export function bedrockModelFromEnv(env: NodeJS.ProcessEnv = process.env): ModelClient | undefined {
  const modelId = env.BATON_BEDROCK_MODEL_ID;
  if (!modelId) return undefined;
  const maxDurationMs = Number(env.BATON_MODEL_MAX_DURATION_MS ?? 60_000);
  let client: ModelClient | undefined;
  return {
    id: modelId,
    maxDurationMs,
    converse(request, signal) {
      client ??= new BedrockModelClient({ modelId, maxDurationMs });
      return client.converse(request, signal);
    },
  };
}
