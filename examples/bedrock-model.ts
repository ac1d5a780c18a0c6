import type { ModelClient } from '../lib/ports/model-client.ts';

/**
 * Bedrock when `BATON_BEDROCK_MODEL_ID` names a model; otherwise undefined (the examples then use
 * their scripted model). The Bedrock client is imported on first use, so deployments that run
 * the scripted model never load it.
 */
export function bedrockModelFromEnv(env: NodeJS.ProcessEnv = process.env): ModelClient | undefined {
  const modelId = env.BATON_BEDROCK_MODEL_ID;
  if (!modelId) return undefined;
  const maxDurationMs = Number(env.BATON_MODEL_MAX_DURATION_MS ?? 60_000);
  let client: Promise<ModelClient> | undefined;
  return {
    id: modelId,
    maxDurationMs,
    async converse(request, signal) {
      client ??= import('../lib/adapters/bedrock/bedrock-model-client.ts').then(
        ({ BedrockModelClient }) => new BedrockModelClient({ modelId, maxDurationMs }) as ModelClient,
      );
      return (await client).converse(request, signal);
    },
  };
}
