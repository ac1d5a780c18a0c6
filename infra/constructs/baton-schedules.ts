import { Duration, Stack, TimeZone } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Schedule, ScheduleExpression, ScheduleTargetInput } from 'aws-cdk-lib/aws-scheduler';
import { SqsSendMessage } from 'aws-cdk-lib/aws-scheduler-targets';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  SCHEDULED_TIME_PLACEHOLDER,
  type ScheduleDefinition,
  scheduledTicket,
} from '../../lib/agent/define-schedule.ts';

export interface BatonSchedulesProps {
  readonly schedules: readonly ScheduleDefinition[];
  readonly ticketsQueue: IQueue;
  /** Where a fire that could not be delivered goes, beside the tickets intake could not take. */
  readonly ticketsDlq: IQueue;
}

/** A fire not delivered within this is dropped to the DLQ: the next fire is due soon anyway. */
const MAX_FIRE_AGE = Duration.hours(1);

/**
 * EventBridge Scheduler schedules that put each schedule's ticket on the tickets queue at its
 * fire times, under one role that may send to that queue only. The ticket id carries the fire
 * time (`<aws.scheduler.scheduled-time>`), so Scheduler's at-least-once delivery and its
 * retries converge on one session per fire.
 */
export class BatonSchedules extends Construct {
  /** The role Scheduler assumes to send the tickets (intake's producers map binds it to the schedules' tenants). */
  readonly role: Role;
  readonly schedules: readonly Schedule[];

  constructor(scope: Construct, id: string, props: BatonSchedulesProps) {
    super(scope, id);
    const names = new Set<string>();
    for (const { name } of props.schedules) {
      if (names.has(name)) throw new Error(`BatonRuntime: two schedules are named "${name}"`);
      names.add(name);
    }
    this.role = new Role(this, 'SendTickets', {
      description: 'Lets EventBridge Scheduler put the scheduled tickets on the Baton tickets queue.',
      // Only this account's schedules may assume it (the confused-deputy guard Scheduler documents).
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    });
    this.schedules = props.schedules.map(
      (schedule) =>
        new Schedule(this, `Schedule-${schedule.name}`, {
          description: schedule.description ?? `Baton: a ${schedule.agent} ticket at ${schedule.expression}`,
          schedule: ScheduleExpression.expression(schedule.expression, TimeZone.of(schedule.timezone)),
          target: new SqsSendMessage(props.ticketsQueue, {
            role: this.role,
            input: ScheduleTargetInput.fromText(JSON.stringify(scheduledTicket(schedule, SCHEDULED_TIME_PLACEHOLDER))),
            deadLetterQueue: props.ticketsDlq,
            maxEventAge: MAX_FIRE_AGE,
            retryAttempts: 10,
          }),
        }),
    );
  }
}
