import { InvalidInputError } from '../core/errors.ts';
import { type AgentDefinition, type AgentRegistry, REGISTRY_VERSIONS } from './define-agent.ts';

/**
 * Agent versions: which of the versions a deployment holds a session runs on. A session starts
 * on the newest; its agent's upgrade policy (the newest version's) says when it moves on.
 */

/** An agent's version (1 when it declares none). */
export const versionOf = (agent: AgentDefinition): number => agent.version ?? 1;

/** Every version of `name` the registry holds, oldest first; none when it holds no such agent. */
export function agentVersions(registry: AgentRegistry, name: string): readonly AgentDefinition[] {
  const versions = REGISTRY_VERSIONS.get(registry)?.get(name);
  if (versions) return versions;
  const only = registry.get(name);
  return only ? [only] : [];
}

/** The version of the agent a session runs on from here, and whether it moves there now. */
export type VersionChoice =
  /** Run `agent`; `from` is set when the session moves to it from another version (an upgrade to journal). */
  | { readonly kind: 'run'; readonly agent: AgentDefinition; readonly from?: number | undefined }
  /** The session's version is no longer deployed and its policy (or its fork's version) keeps it there. */
  | {
      readonly kind: 'removed';
      readonly version: number;
      readonly deployed: readonly number[];
      /** A fork made to run on this version (`fork --version`) keeps it. */
      readonly forkPinned?: boolean | undefined;
    }
  /** No version of the agent is deployed here. */
  | { readonly kind: 'unknown' };

/**
 * Chooses the version for a session now on `current`, at the start of a leg or (`turnStart`) of a
 * turn: `now` moves to the newest at any leg, `at-turn` at a turn's start, `pin` never (the newest
 * may be older than the session's after a rollback: moving is to the newest either way). A fork
 * made to run on a version (`forkPinned`) never moves: it was asked what that version would do. A
 * version no longer deployed is never guessed at: unless the policy moves the session on, it is `removed`.
 */
export function chooseVersion(
  registry: AgentRegistry,
  name: string,
  current: number,
  turnStart: boolean,
  forkPinned = false,
): VersionChoice {
  const versions = agentVersions(registry, name);
  const newest = versions.at(-1);
  if (!newest) return { kind: 'unknown' };
  const policy = newest.upgrade ?? 'at-turn';
  const moves = !forkPinned && (policy === 'now' || (policy === 'at-turn' && turnStart));
  if (moves && versionOf(newest) !== current) return { kind: 'run', agent: newest, from: current };
  const same = versions.find((a) => versionOf(a) === current);
  if (same) return { kind: 'run', agent: same };
  return {
    kind: 'removed',
    version: current,
    deployed: versions.map(versionOf),
    ...(forkPinned ? { forkPinned } : {}),
  };
}

/** The error a session fails with when its version was removed: names the version and what is deployed. */
export function removedVersionMessage(
  name: string,
  choice: { version: number; deployed: readonly number[]; forkPinned?: boolean | undefined },
): string {
  const why = choice.forkPinned
    ? 'the session is a fork made to run on that version'
    : 'its upgrade policy keeps it on that version';
  return `agent ${name} version ${choice.version}, which this session runs on, is no longer deployed (deployed: ${choice.deployed.join(', ')}); ${why}`;
}

/**
 * The definition of version `version` of `name`, for a fork asked to run on it. Throws
 * InvalidInputError naming the version and the versions deployed when there is no such version.
 */
export function agentAtVersion(registry: AgentRegistry, name: string, version: unknown): AgentDefinition {
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1)
    throw new InvalidInputError(`agent version must be a positive integer, got ${JSON.stringify(version)}`);
  const versions = agentVersions(registry, name);
  const found = versions.find((a) => versionOf(a) === version);
  if (!found)
    throw new InvalidInputError(
      `agent ${name} has no version ${version} (deployed: ${versions.map(versionOf).join(', ') || 'none'})`,
    );
  return found;
}
