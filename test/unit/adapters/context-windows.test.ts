import { describe, expect, it } from 'vitest';
import { foundationModelId, knownContextWindow, modelFamilyName } from '../../../lib/adapters/context-windows.ts';

describe('knownContextWindow', () => {
  it.each([
    ['anthropic.claude-3-5-sonnet-20240620-v1:0', 200_000],
    ['global.anthropic.claude-sonnet-4-5-20250929-v1:0', 200_000],
    ['arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-haiku-4-5-20251001-v1:0', 200_000],
    ['anthropic.claude-instant-v1', 100_000],
    ['claude-opus-4-1', 200_000],
    ['amazon.nova-pro-v1:0', 300_000],
    ['us.amazon.nova-micro-v1:0', 128_000],
    ['amazon.nova-premier-v1:0', 1_000_000],
    ['meta.llama3-1-70b-instruct-v1:0', 128_000],
    ['meta.llama3-70b-instruct-v1:0', 8_000],
    ['gpt-4.1-mini', 1_047_576],
    ['gpt-4o', 128_000],
  ])('knows %s: %i tokens', (modelId, tokens) => {
    expect(knownContextWindow(modelId)).toBe(tokens);
  });

  it('knows no window for a model it does not list, so its agent compacts only when told a window', () => {
    expect(knownContextWindow('acme.house-model-v1:0')).toBeUndefined();
    expect(knownContextWindow('mistral.mistral-7b-instruct-v0:2')).toBeUndefined();
  });
});

describe('model names', () => {
  it('drops an inference profile geography but keeps a foundation model and a dotted version', () => {
    expect(foundationModelId('eu.anthropic.claude-3-haiku-20240307-v1:0')).toBe(
      'anthropic.claude-3-haiku-20240307-v1:0',
    );
    expect(foundationModelId('anthropic.claude-3-haiku-20240307-v1:0')).toBe('anthropic.claude-3-haiku-20240307-v1:0');
    expect(modelFamilyName('gpt-4.1')).toBe('gpt-4.1');
    expect(modelFamilyName('us.meta.llama3-3-70b-instruct-v1:0')).toBe('llama3-3-70b-instruct-v1:0');
  });
});
