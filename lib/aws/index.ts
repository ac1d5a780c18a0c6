/**
 * `@baton-run/baton/aws`: what a Lambda bundle imports — the handler factories and the runtime's
 * dependencies. Nothing here reads a test switch: the local stack passes its hooks as overrides.
 */
export { type FunctionConfig, loadConfig } from './function-config.ts';
export { createIntakeHandler, createStepHandler, createSweeperHandler, type HandlerOptions } from './handlers.ts';
export { createHttpApiHandler, type HttpApiHandlerOptions } from './http-api-handler.ts';
export {
  createRuntimeDeps,
  type FunctionRuntime,
  type RuntimeClients,
  type RuntimeDepsOverrides,
  telemetryFor,
} from './runtime-deps.ts';
