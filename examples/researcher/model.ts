import type { ModelClient } from '@baton-run/baton';

/**
 * The researcher's model: an Amazon Bedrock model through the AI SDK when
 * `BATON_RESEARCHER_MODEL_ID` names one, the AI SDK's mock otherwise. The AI SDK is imported on
 * the first call, so a deployment that never runs the researcher never loads it.
 */
export function researcherModel(env: NodeJS.ProcessEnv = process.env): ModelClient {
  const modelId = env.BATON_RESEARCHER_MODEL_ID;
  const maxDurationMs = modelId ? Number(env.BATON_MODEL_MAX_DURATION_MS ?? 60_000) : 3_000;
  let client: Promise<ModelClient> | undefined;
  const load = async (): Promise<ModelClient> => {
    const { AiSdkModelClient } = await import('@baton-run/baton/ai-sdk');
    if (!modelId) {
      const { mockResearcherModel } = await import('./mock-researcher.ts');
      return new AiSdkModelClient({ model: mockResearcherModel(), maxDurationMs, stream: true });
    }
    const { createAmazonBedrock } = await import('@ai-sdk/amazon-bedrock');
    const bedrock = createAmazonBedrock(env.AWS_REGION ? { region: env.AWS_REGION } : {});
    return new AiSdkModelClient({ model: bedrock(modelId), maxDurationMs, stream: true });
  };
  return {
    id: modelId ? `amazon-bedrock:${modelId}` : 'mock:researcher',
    maxDurationMs,
    async converse(request, signal, stream) {
      client ??= load();
      return (await client).converse(request, signal, stream);
    },
  };
}
