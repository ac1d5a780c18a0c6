/** `baton/cdk`: the BatonRuntime construct and its props. */
export { type BatonProducer, BatonRuntime, type BatonRuntimeProps } from './baton-runtime.ts';
