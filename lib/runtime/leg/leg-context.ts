import type { AgentDefinition } from '../../agent/define-agent.ts';
import type { SessionKey } from '../../core/ids.ts';
import type { TraceContext } from '../../core/trace-context.ts';
import type { KickReason } from '../../core/vocabulary.ts';
import type { LegSpan } from '../../telemetry/telemetry.ts';
import type { RuntimeDeps, RuntimeLogger } from '../deps.ts';
import type { LegResources } from '../leg-resources.ts';
import type { Invocation } from './invocation.ts';
import type { JournalWriter } from './journal-writer.ts';
import type { LegSignals } from './leg-signals.ts';

/** How a kick ended. */
export type KickOutcome = 'dropped' | 'delayed' | 'finished' | 'yielded' | 'waiting' | 'parked' | 'lease-lost';

/**
 * What every step of a leg works with: who it is, what it may spend, its signals and its journal.
 * Steps are functions of this context, so a new step is a new small module, not a new method.
 */
export interface LegContext {
  readonly key: SessionKey;
  readonly owner: string;
  /** Why this leg started, as its marker records it. */
  readonly reason: KickReason;
  readonly invocation: Invocation;
  readonly deps: RuntimeDeps;
  readonly log: RuntimeLogger;
  readonly trace: TraceContext;
  readonly signals: LegSignals;
  readonly journal: JournalWriter;
  /** The leg's trace span (a no-op until the leg marker is written, or without leg spans). */
  readonly span: LegSpan;
  /** Connections tools open for this leg (MCP clients): closed before the leg hands off. */
  readonly resources: LegResources;
  /** The session's agent, when it is deployed here: the version the session runs on once the leg chose it. */
  readonly agent: AgentDefinition | undefined;
  /** Runs the rest of the leg on this version of the agent (a turn's start chose it). */
  useAgent(agent: AgentDefinition): void;
  /**
   * The turn whose result this leg sent and has not yet recorded: the release that records it
   * (`publishedTurnId`) may be refused by an event that arrived meanwhile, and the leg that goes
   * on to handle it must not send the result again.
   */
  resultSent: string | undefined;
}
