import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { BatonRuntime } from '../../infra/constructs/baton-runtime.ts';
import { defineSchedule } from '../../lib/agent/define-schedule.ts';
import { Ticket } from '../../lib/core/messages.ts';
import { parseProducers } from '../../lib/core/tenancy.ts';
import { FIXTURE_AGENTS_ENTRY, synthWithPolicyChecks } from './synth-baton.ts';

const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

const morning = defineSchedule({
  name: 'morning-digest',
  agent: 'digest',
  tenant: 'acme',
  input: { topic: 'news' },
  cron: '0 9 ? * MON-FRI *',
  timezone: 'Europe/Paris',
});
const hourly = defineSchedule({ name: 'hourly', agent: 'digest', input: { topic: 'all' }, every: '1 hour' });

function synth(props: { producers?: { sender: string; tenants: string[] }[] } = {}) {
  const stack = new Stack(new App({ context: NO_BUNDLING }), 'Schedules');
  const baton = new BatonRuntime(stack, 'Baton', {
    agentsEntry: FIXTURE_AGENTS_ENTRY,
    schedules: [morning, hourly],
    ...props,
  });
  return { stack, baton, template: Template.fromStack(stack) };
}

// Template.fromStack synthesises the stack: on a loaded machine the first one takes a while.
describe('BatonRuntime schedules', { timeout: 180_000 }, () => {
  it('creates one Scheduler schedule per definition, sending a ticket whose id carries the fire time', () => {
    const { template, stack, baton } = synth();
    const schedules = template.findResources('AWS::Scheduler::Schedule');
    const byExpression = Object.fromEntries(
      Object.values(schedules).map((r) => [r.Properties.ScheduleExpression, r.Properties]),
    );
    expect(Object.keys(byExpression).sort()).toEqual(['cron(0 9 ? * MON-FRI *)', 'rate(1 hour)']);
    const cron = byExpression['cron(0 9 ? * MON-FRI *)'];
    expect(cron.ScheduleExpressionTimezone).toBe('Europe/Paris');
    expect(cron.Target.Arn).toEqual({
      'Fn::GetAtt': [stack.getLogicalId(baton.ticketsQueue.node.defaultChild as never), 'Arn'],
    });
    const ticket = JSON.parse(cron.Target.Input);
    expect(ticket).toEqual({
      v: 1,
      ticketId: 'schedule:morning-digest:<aws.scheduler.scheduled-time>',
      agent: 'digest',
      tenant: 'acme',
      input: { topic: 'news' },
    });
    // What intake will parse once Scheduler fills the time in.
    const fired = cron.Target.Input.replace('<aws.scheduler.scheduled-time>', '2026-12-07T08:00:00Z');
    expect(Ticket.safeParse(JSON.parse(fired)).success).toBe(true);
    expect(cron.Target.DeadLetterConfig.Arn).toEqual({
      'Fn::GetAtt': [stack.getLogicalId(baton.ticketsDlq.node.defaultChild as never), 'Arn'],
    });
  });

  it('sends under a role only this account’s Scheduler assumes, allowed to send to the tickets queue and its DLQ only', () => {
    const { template, stack, baton } = synth();
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [
          Match.objectLike({
            Principal: { Service: 'scheduler.amazonaws.com' },
            Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
          }),
        ],
      },
    });
    const policies = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
      JSON.stringify(p.Properties.Roles).includes('SendTickets'),
    );
    const statements = policies.flatMap(
      (p) => p.Properties.PolicyDocument.Statement as { Action: unknown; Resource: unknown }[],
    );
    // The tickets queue, and its DLQ for a fire Scheduler could not deliver.
    const queues = [baton.ticketsQueue, baton.ticketsDlq].map((q) => stack.getLogicalId(q.node.defaultChild as never));
    expect(new Set(statements.map((s) => s.Action))).toEqual(new Set(['sqs:SendMessage']));
    expect(new Set(statements.map((s) => (s.Resource as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0]))).toEqual(
      new Set(queues),
    );
  });

  it('binds the schedules’ role to their tenants when intake checks producers', () => {
    const { stack, baton, template } = synth({ producers: [{ sender: 'AROAOTHER', tenants: ['globex'] }] });
    const intake = stack.getLogicalId(baton.intakeFunction.function.node.defaultChild as CfnFunction);
    // Role ids resolve at deploy time: stand the role's logical id in for each.
    const [, parts] = template.toJSON().Resources[intake].Properties.Environment.Variables.BATON_PRODUCERS[
      'Fn::Join'
    ] as [string, (string | { 'Fn::GetAtt': [string, string] })[]];
    const json = parts.map((part) => (typeof part === 'string' ? part : part['Fn::GetAtt'][0])).join('');
    const producers = parseProducers(json);
    const schedulesRole = [...producers.keys()].find((sender) => sender.includes('SchedulesSendTickets'));
    expect(schedulesRole && producers.get(schedulesRole)).toEqual(['acme', 'default']);
    expect(producers.get('AROAOTHER')).toEqual(['globex']);
  });

  it("passes cdk-nag's checks with schedules", () => {
    const synthesized = synthWithPolicyChecks(
      (app) =>
        new BatonRuntime(new Stack(app, 'Nagged'), 'Baton', {
          agentsEntry: FIXTURE_AGENTS_ENTRY,
          schedules: [morning],
        }),
      { bundleStacks: [] },
    );
    const violations = (synthesized.report?.pluginReports ?? []).flatMap((p) =>
      p.violations.map((v) => `${p.pluginName}: ${v.ruleName}`),
    );
    expect(violations).toEqual([]);
  });

  it('refuses two schedules of one name', () => {
    const stack = new Stack(new App({ context: NO_BUNDLING }), 'Twice');
    expect(
      () => new BatonRuntime(stack, 'Baton', { agentsEntry: FIXTURE_AGENTS_ENTRY, schedules: [hourly, hourly] }),
    ).toThrow(/two schedules are named "hourly"/);
  });
});
