import type { Theme } from './plan.ts';
import type { Rng } from './rng.ts';
import type { ActorKind, GateFault, OpKind } from './scheduler.ts';

/**
 * Which faults a run injects, and how often. Each seed draws its own mix (swarm testing: a run
 * with only crashes, or only throttles, reaches states a run with everything at once rarely
 * does), and the drain at the end of every run turns them all off, so liveness can be judged.
 */
export interface FaultProfile {
  /** Per opened gate of a worker, intake, sweeper or client: the actor dies there. */
  readonly crash: number;
  /**
   * Per downstream call of a worker (before it reaches the service, or before its answer comes
   * back): the worker dies there. Far likelier than `crash`, so interrupted once-only calls —
   * and the reconciles, parks and resolves that follow them — are common, not one in thousands.
   */
  readonly crashInCall: number;
  /** The same, for a once-only call or its reconcile: the interruptions the protocol exists for. */
  readonly crashInEffect: number;
  /** Per opened gate of a worker: it freezes past its lease, then goes on. */
  readonly pause: number;
  readonly throttleRead: number;
  readonly throttleWrite: number;
  /** A write that commits and then fails (the SDK gave up on its response). */
  readonly lostResponse: number;
  /** A write that commits, loses its response and is sent again by the SDK. */
  readonly retried: number;
  /** A queue send that fails (nothing sent). */
  readonly sendFail: number;
  readonly dropKick: number;
  readonly duplicateKick: number;
  readonly delayKick: number;
  /** Per step: the clock jumps past a lease TTL or more while everyone is mid-flight. */
  readonly timeJump: number;
  /** Per reconcile: the downstream cannot tell whether the call happened (the session parks). */
  readonly reconcileUnknown: number;
  /** Per downstream call of a pure service: a transient error (the turn's retry policy applies). */
  readonly serviceError: number;
}

export const NO_FAULTS: FaultProfile = {
  crash: 0,
  crashInCall: 0,
  crashInEffect: 0,
  pause: 0,
  throttleRead: 0,
  throttleWrite: 0,
  lostResponse: 0,
  retried: 0,
  sendFail: 0,
  dropKick: 0,
  duplicateKick: 0,
  delayKick: 0,
  timeJump: 0,
  reconcileUnknown: 0,
  serviceError: 0,
};

/**
 * A seed's mix: about one run in ten injects nothing but interleavings; the others a random
 * subset. A run about once-only effects always interrupts them and often cannot reconcile them.
 */
export function drawProfile(rng: Rng, theme: Theme): FaultProfile {
  if (theme === 'effects')
    return {
      ...drawProfile(rng, 'mixed'),
      crashInEffect: rng.pick([0.3, 0.6]),
      reconcileUnknown: rng.pick([0.5, 0.8]),
    };
  if (rng.chance(0.1)) return NO_FAULTS;
  const some = (p: number, rates: readonly number[]) => (rng.chance(p) ? rng.pick(rates) : 0);
  return {
    crash: some(0.6, [0.003, 0.01, 0.03]),
    crashInCall: some(0.4, [0.05, 0.2]),
    crashInEffect: some(0.5, [0.2, 0.5]),
    pause: some(0.4, [0.003, 0.01, 0.02]),
    throttleRead: some(0.5, [0.01, 0.03, 0.08]),
    throttleWrite: some(0.5, [0.01, 0.03, 0.08]),
    lostResponse: some(0.4, [0.01, 0.03]),
    retried: some(0.4, [0.01, 0.05]),
    sendFail: some(0.4, [0.01, 0.05]),
    dropKick: some(0.4, [0.05, 0.2]),
    duplicateKick: some(0.5, [0.1, 0.5]),
    delayKick: some(0.4, [0.1, 0.3]),
    timeJump: some(0.4, [0.002, 0.01]),
    reconcileUnknown: some(0.5, [0.3, 0.7]),
    serviceError: some(0.4, [0.05, 0.15]),
  };
}

/** What happens to one gate as it opens: the actor dies or freezes there, or the call meets a fault. */
export type GateVerdict =
  | { readonly kind: 'crash' }
  | { readonly kind: 'pause' }
  | { readonly kind: 'go'; readonly fault?: GateFault };

const CRASHABLE: readonly ActorKind[] = ['worker', 'intake', 'sweeper', 'client'];

export function gateVerdict(rng: Rng, profile: FaultProfile, actor: ActorKind, op: OpKind, name: string): GateVerdict {
  if (CRASHABLE.includes(actor) && rng.chance(profile.crash)) return { kind: 'crash' };
  if (actor === 'worker' && op === 'service') {
    const effect = name.startsWith('svc.refund') || name.startsWith('svc.reconcile');
    if (rng.chance(effect ? profile.crashInEffect : profile.crashInCall)) return { kind: 'crash' };
  }
  if (actor === 'worker' && rng.chance(profile.pause)) return { kind: 'pause' };
  switch (op) {
    case 'read':
      return rng.chance(profile.throttleRead) ? { kind: 'go', fault: 'throttle' } : { kind: 'go' };
    case 'write':
      if (rng.chance(profile.throttleWrite)) return { kind: 'go', fault: 'throttle' };
      if (rng.chance(profile.lostResponse)) return { kind: 'go', fault: 'lost-response' };
      if (rng.chance(profile.retried)) return { kind: 'go', fault: 'retried' };
      return { kind: 'go' };
    case 'send':
      if (rng.chance(profile.sendFail)) return { kind: 'go', fault: 'throttle' };
      if (rng.chance(profile.dropKick)) return { kind: 'go', fault: 'drop' };
      if (rng.chance(profile.duplicateKick)) return { kind: 'go', fault: 'duplicate' };
      if (rng.chance(profile.delayKick)) return { kind: 'go', fault: 'delay' };
      return { kind: 'go' };
    case 'publish':
      return rng.chance(profile.sendFail) ? { kind: 'go', fault: 'throttle' } : { kind: 'go' };
    case 'service':
      return { kind: 'go' };
  }
}

/** Marks the errors the simulator injects, so a check can tell them from the runtime's own. */
export const SIM_FAULT = Symbol.for('baton.sim.fault');

/** A throttle as the AWS SDK raises it once its own retries gave up (DynamoDB's and SQS's shape). */
export function throttleError(): Error {
  const error = Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ThrottlingException',
    $fault: 'client',
    $metadata: { httpStatusCode: 400, attempts: 3 },
    $retryable: { throttling: true },
  });
  Object.defineProperty(error, SIM_FAULT, { value: true });
  return error;
}

/** A request whose response never came back (it may have committed): the SDK's timeout after its retries. */
export function lostResponseError(): Error {
  const error = Object.assign(new Error('Connection timed out after 3000 ms'), {
    name: 'TimeoutError',
    $metadata: { attempts: 3 },
  });
  Object.defineProperty(error, SIM_FAULT, { value: true });
  return error;
}

/** Is this error (or one it wraps) a fault the simulator injected? */
export function isInjected(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++)
    if ((e as unknown as Record<symbol, unknown>)[SIM_FAULT] === true) return true;
  return false;
}

/** Text an outcome carries when an injected fault failed a turn. */
export const INJECTED_TEXT = /ThrottlingException|Rate of requests exceeds|TimeoutError: Connection timed out/;
