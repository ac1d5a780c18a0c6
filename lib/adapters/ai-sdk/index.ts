/** `@baton-run/baton/ai-sdk`: any Vercel AI SDK language model as a Baton model client. */
export { AiSdkModelClient, type AiSdkModelClientOptions } from './ai-sdk-model-client.ts';
