/**
 * The context windows (input tokens) of the model families whose providers publish one, so an
 * agent compacts before its transcript outgrows its model without being told the window. Matched
 * on the model's name with any Bedrock ARN, geography prefix (`eu.`, `global.` …) and provider
 * prefix (`anthropic.`, `meta.`) removed. A model not listed has no default: its agent compacts
 * only when it sets `contextWindowTokens`. Where a provider offers a larger window behind an
 * opt-in (Claude's 1M-token beta), the listed figure is the one every account gets.
 *
 * Sources (2026-11): Anthropic's models overview; Amazon Nova's user guide; Meta's Llama 3.x model
 * cards on Bedrock; OpenAI's model pages; Cohere's Command R cards; DeepSeek-R1 on Bedrock.
 */
const KNOWN_WINDOWS: ReadonlyArray<readonly [pattern: RegExp, tokens: number]> = [
  // Claude Instant and 2.0 had 100k (2.1: 200k); the smaller figure for the family errs safe.
  [/^claude-(instant|v2)/, 100_000],
  [/^claude-/, 200_000],
  [/^nova-premier/, 1_000_000],
  [/^nova-(pro|lite)-v1/, 300_000],
  [/^nova-micro/, 128_000],
  [/^llama3-[123]-/, 128_000],
  [/^llama3-/, 8_000],
  [/^command-r/, 128_000],
  [/^r1-v1/, 128_000],
  [/^gpt-4\.1/, 1_047_576],
  [/^gpt-5/, 400_000],
  [/^gpt-4o/, 128_000],
];

/** The foundation model behind a Bedrock id: a cross-region inference profile's geography prefix dropped. */
export const foundationModelId = (modelId: string): string =>
  modelId.replace(/^(us|us-gov|eu|apac|jp|au|ca|global)\.(?=[a-z0-9-]+\.)/, '');

/** A model id as the families above are named: no ARN, geography or Bedrock provider prefix. */
export function modelFamilyName(modelId: string): string {
  const withoutGeography = foundationModelId(modelId.slice(modelId.lastIndexOf('/') + 1));
  // A dot followed by a letter ends Bedrock's provider (anthropic.claude-…), not a version (gpt-4.1).
  return withoutGeography.replace(/^[a-z0-9-]+\.(?=[a-z])/, '');
}

/** The published context window of `modelId`'s family, or undefined when it is not known here. */
export function knownContextWindow(modelId: string): number | undefined {
  const name = modelFamilyName(modelId);
  return KNOWN_WINDOWS.find(([pattern]) => pattern.test(name))?.[1];
}
