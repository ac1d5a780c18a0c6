/**
 * `@baton-run/baton/local`: your agents on the embedded local stack, from a test or a script. For
 * development only; no Lambda bundle imports it.
 */
export { type LocalBaton, type LocalBatonOptions, startLocalBaton, waitForOutcome } from './local-baton.ts';
