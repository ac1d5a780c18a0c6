/** `@baton-run/baton/cdk`: the BatonRuntime construct and its props. */
export {
  type ApiGrant,
  type ApiRole,
  type BatonProducer,
  BatonRuntime,
  type BatonRuntimeProps,
} from './baton-runtime.ts';
