import { chooseVersion, removedVersionMessage, type VersionChoice, versionOf } from '../../agent/agent-versions.ts';
import type { AgentDefinition } from '../../agent/define-agent.ts';
import { journalFormatOf } from '../deps.ts';
import type { LegContext } from './leg-context.ts';

/**
 * Which version of its agent a session runs on (lib/agent/agent-versions.ts), as a leg sees it:
 * the journal's (the last turn's input, or an `upgraded` entry since), else the one the session
 * was created on, else 1 (a session from before agents had versions).
 */
export function currentVersion(leg: LegContext): number {
  return leg.journal.view.agentVersion ?? leg.signals.record.agentVersion ?? 1;
}

/** Whether this worker keeps agent versions: a build configured as format 1 runs the newest, as before versions. */
export const keepsVersions = (leg: LegContext): boolean => journalFormatOf(leg.deps.config) >= 2;

/** The version choice for this session now, at a turn's start or not. */
export const versionChoice = (leg: LegContext, turnStart: boolean): VersionChoice =>
  chooseVersion(
    leg.deps.agents,
    leg.key.agent,
    currentVersion(leg),
    turnStart,
    leg.journal.view.fork?.version !== undefined,
  );

/**
 * Journals a move to another version of the agent (`upgraded`, from/to) and records it on the
 * session record (what `baton versions` counts) with a renewal, which only the holder can make.
 */
export async function journalUpgrade(leg: LegContext, from: number, to: AgentDefinition): Promise<void> {
  const version = versionOf(to);
  await leg.journal.append('upgraded', { from, to: version });
  await recordVersion(leg, version);
  leg.log.info('session upgraded', { from, to: version });
}

/**
 * At a leg's start (not a turn's): the agent it runs, after journaling a move its policy makes
 * now; or why it cannot run (its version was removed), to fail the turn with.
 */
export async function agentForLeg(leg: LegContext): Promise<{ agent: AgentDefinition } | { error: string }> {
  const choice = versionChoice(leg, false);
  const newest = leg.deps.agents.get(leg.key.agent) as AgentDefinition;
  if (choice.kind === 'unknown') return { agent: newest };
  // A turn that has its outcome only publishes and releases: no version of the agent runs.
  if (leg.journal.view.outcome) return { agent: choice.kind === 'run' ? choice.agent : newest };
  if (choice.kind === 'removed') return { error: removedVersionMessage(leg.key.agent, choice) };
  if (choice.from !== undefined) await journalUpgrade(leg, choice.from, choice.agent);
  else await recordVersion(leg, versionOf(choice.agent));
  return { agent: choice.agent };
}

/**
 * Brings the record's copy of the version up to the journal's when a leg died between an
 * `upgraded` entry and the renewal that records it: the record is only an index for reports.
 */
async function recordVersion(leg: LegContext, version: number): Promise<void> {
  if (leg.journal.view.agentVersion === undefined || leg.signals.record.agentVersion === version) return;
  await leg.deps.store.renew(leg.key, {
    owner: leg.owner,
    epoch: leg.signals.epoch,
    until: leg.deps.clock.now() + leg.deps.config.leaseTtlMs,
    progressed: leg.journal.progressed,
    agentVersion: version,
  });
}
