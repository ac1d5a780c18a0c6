import { API_ROLES } from './resources.ts';

/**
 * What a caller may do with its tenants' sessions. A tenant says whose sessions a caller sees; a
 * role says what it may do with them, so an approver need not be able to steer, nor a reader to
 * invent a parked call's output.
 */
export type Role = (typeof API_ROLES)[number];

/** Every role: the local developer's when `baton dev` maps no callers, and the shorthand grant's. */
export const ALL_ROLES: readonly Role[] = API_ROLES;

/**
 * The role each operation needs, written once: the API's routes and the client's methods both
 * read it, so an operation cannot need one role over HTTP and another on the store.
 */
export const OPERATION_ROLES = {
  submit: 'submit',
  // A fork starts a session, like a submit; it also reads the original, so it needs `read` too (forkRoles).
  fork: 'submit',
  // A further turn, a message into the running turn and a steer all speak to the agent.
  send: 'converse',
  approve: 'approve',
  // Recording whether a parked once-only call happened is an operator's word, not an approver's.
  resolve: 'operate',
  cancel: 'operate',
  // Stopping one turn is a cancel of that turn alone (the chat's stop needs what a cancel needs).
  stopTurn: 'operate',
  release: 'operate',
  status: 'read',
  sessions: 'read',
  events: 'read',
  tasks: 'read',
} as const satisfies Record<string, Role>;
export type Operation = keyof typeof OPERATION_ROLES;

/** Every role a fork needs: `submit` to start a session, and `read` on the original, whose history it shows. */
export const FORK_ROLES: readonly Role[] = [OPERATION_ROLES.fork, OPERATION_ROLES.status];

/** What each role allows, as a refusal explains it. */
const ROLE_MEANING: Record<Role, string> = {
  submit: 'submit tickets',
  converse: 'send turns, messages and steers to a conversation',
  approve: 'approve or deny a call that waits for a human',
  operate: 'cancel a session or stop a turn, release, and resolve a parked call',
  read: 'read sessions, their events and their tasks',
};

export const isRole = (value: string): value is Role => (API_ROLES as readonly string[]).includes(value);

/** The role `operation` needs that `roles` lacks, or undefined when the caller may go ahead. */
export function missingRole(roles: readonly Role[], operation: Operation): Role | undefined {
  const needed = OPERATION_ROLES[operation];
  return roles.includes(needed) ? undefined : needed;
}

/** The sentence a refusal says: who was refused, and the role (and what it allows) it lacks. */
export const roleRefusal = (principal: string, role: Role): string =>
  `${principal} lacks the role '${role}' (${ROLE_MEANING[role]})`;
