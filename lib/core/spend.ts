import * as z from 'zod';
import { InvalidInputError } from './errors.ts';
import type { Usage } from './messages.ts';

/**
 * Spend: what model calls used (tokens, calls, dollars) and the limits an agent or a ticket puts
 * on it. "Budget" in the rest of Baton is an invocation's time; here the word is kept only
 * in `onBudget` and the `budget-exceeded` outcome, the names users see.
 */

/** A model's price in US dollars per million tokens. */
export interface ModelPrice {
  readonly inputPerMillionTokens: number;
  readonly outputPerMillionTokens: number;
}

/** Prices by model id (`ModelClient.id`); a model missing from it costs nothing that is counted. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** What a call with this usage cost, or undefined when its model has no price. */
export function costOf(usage: Usage, price: ModelPrice | undefined): number | undefined {
  if (price === undefined) return undefined;
  const usd =
    (usage.inputTokens * price.inputPerMillionTokens + usage.outputTokens * price.outputPerMillionTokens) / 1_000_000;
  // Rounded to a millionth of a cent, so sums stay readable and deterministic.
  return Math.round(usd * 1e8) / 1e8;
}

/** What a turn may spend before it ends `budget-exceeded` (or asks to go on, with `onBudget: 'ask'`). */
export interface SpendLimits {
  /** Input plus output tokens of the turn's model calls (compactions included). */
  readonly maxTokensPerTurn?: number | undefined;
  /** US dollars of the session's model calls, priced by the agent's price table. */
  readonly maxCostPerSession?: number | undefined;
  /** Model calls of the turn (compactions included). */
  readonly maxModelCallsPerTurn?: number | undefined;
  /** `fail` (default): the turn ends `budget-exceeded`; `ask`: it waits for a human's approve to go on. */
  readonly onBudget?: 'fail' | 'ask' | undefined;
}

const positive = z.number().positive().finite();
const count = z.number().int().positive();

/** Limits as a ticket or a definition states them: every field optional, every number positive. */
export const SpendLimitsSchema = z
  .object({
    maxTokensPerTurn: count.optional(),
    maxCostPerSession: positive.optional(),
    maxModelCallsPerTurn: count.optional(),
    onBudget: z.enum(['fail', 'ask']).optional(),
  })
  .strict();

export type SpendLimitName = 'maxTokensPerTurn' | 'maxCostPerSession' | 'maxModelCallsPerTurn';
const LIMIT_NAMES: readonly SpendLimitName[] = ['maxTokensPerTurn', 'maxCostPerSession', 'maxModelCallsPerTurn'];

/**
 * The limits a turn runs under: the agent's, lowered by the ticket's. A ticket may tighten a limit
 * or set one the agent leaves open, never raise one past the agent's ceiling: that is refused with
 * an error naming the limit.
 */
export function turnLimits(agent: SpendLimits | undefined, ticket: SpendLimits | undefined): SpendLimits {
  const limits: Record<string, unknown> = { ...agent };
  for (const name of LIMIT_NAMES) {
    const asked = ticket?.[name];
    if (asked === undefined) continue;
    const ceiling = agent?.[name];
    if (ceiling !== undefined && asked > ceiling)
      throw new InvalidInputError(`ticket ${name} ${asked} is above the agent's ceiling of ${ceiling}`);
    limits[name] = asked;
  }
  if (ticket?.onBudget !== undefined) limits.onBudget = ticket.onBudget;
  return limits as SpendLimits;
}

/**
 * The limits a running turn obeys: the ticket's, each capped by the agent's current ceiling. Intake
 * refused a ticket above the ceiling; a ceiling lowered by a redeploy since then still holds.
 */
export function ceilingLimits(agent: SpendLimits, ticket: SpendLimits | undefined): SpendLimits {
  if (ticket === undefined) return agent;
  const limits: Record<string, unknown> = { ...agent, ...(ticket.onBudget ? { onBudget: ticket.onBudget } : {}) };
  for (const name of LIMIT_NAMES) {
    const values = [agent[name], ticket[name]].filter((v): v is number => v !== undefined);
    if (values.length > 0) limits[name] = Math.min(...values);
  }
  return limits as SpendLimits;
}

/** What was spent, as a turn's limits count it (since the last approval to go on) and in all. */
export interface Spent {
  readonly turnTokens: number;
  readonly turnModelCalls: number;
  readonly sessionCostUsd: number;
}

/** The spend a turn's limits are measured against: an approval to go on starts it over. */
export interface SpendBase {
  readonly turnTokens: number;
  readonly turnModelCalls: number;
  readonly sessionCostUsd: number;
}

export const ZERO_SPEND: SpendBase = { turnTokens: 0, turnModelCalls: 0, sessionCostUsd: 0 };

/** The limit reached, what it allows and what was spent against it. */
export interface LimitReached {
  readonly limit: SpendLimitName;
  readonly allowed: number;
  readonly spent: number;
}

/**
 * The first limit the spend has reached, measured from `base`. It is checked before each model
 * call: a call starts only while every limit has room, so one call may overshoot a token or cost
 * limit by its own size, never start past it; the model-call limit is never passed.
 */
export function limitReached(spent: Spent, base: SpendBase, limits: SpendLimits): LimitReached | undefined {
  const against: Record<SpendLimitName, number> = {
    maxTokensPerTurn: spent.turnTokens - base.turnTokens,
    maxModelCallsPerTurn: spent.turnModelCalls - base.turnModelCalls,
    maxCostPerSession: spent.sessionCostUsd - base.sessionCostUsd,
  };
  for (const limit of LIMIT_NAMES) {
    const allowed = limits[limit];
    if (allowed !== undefined && against[limit] >= allowed) return { limit, allowed, spent: against[limit] };
  }
  return undefined;
}

/** One line for an outcome or a log: the limit reached and everything spent. */
export function describeLimitReached(reached: LimitReached, spent: Spent): string {
  const cost = `$${spent.sessionCostUsd.toFixed(6)}`;
  return (
    `${reached.limit} of ${reached.allowed} reached (${reached.spent} spent against it): ` +
    `this turn spent ${spent.turnTokens} tokens in ${spent.turnModelCalls} model calls; the session ${cost}`
  );
}

/** The tool name a budget approval request carries: no agent tool can take it (tool names match TOOL_NAME, which has no colon). */
export const BUDGET_APPROVAL_TOOL = 'baton:budget';
