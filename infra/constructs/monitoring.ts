import { Duration } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  SingleValueWidget,
  Stats,
  TextWidget,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/** The EMF namespace and `service` dimension the functions publish under (lib/telemetry, tested equal). */
export const METRICS_NAMESPACE = 'Baton';
export const SERVICE_NAME = 'baton';

/** The runtime's metric names (lib/telemetry METRIC; a test keeps the two equal). */
export const BATON_METRIC = {
  steps: 'Steps',
  stepDuration: 'StepDuration',
  legs: 'Legs',
  yields: 'Yields',
  recoveries: 'Recoveries',
  leaseConflicts: 'LeaseConflicts',
  duplicateKicksDropped: 'DuplicateKicksDropped',
  bytesJournaled: 'BytesJournaled',
  inputTokens: 'InputTokens',
  outputTokens: 'OutputTokens',
  outcomes: 'Outcomes',
  stalledSessions: 'StalledSessions',
  /** Chunks of streamed model text written for live followers (never journaled), and the writes that failed. */
  liveTextWrites: 'LiveTextWrites',
  liveTextWriteFailures: 'LiveTextWriteFailures',
} as const;

/** Values of the `status` dimension on `Outcomes` (lib/core OutcomeStatus; tested equal). */
export const OUTCOME_STATUSES = ['completed', 'failed', 'cancelled', 'superseded'] as const;

const PERIOD = Duration.minutes(1);

export interface BatonMonitoringProps {
  readonly functions: { readonly intake: IFunction; readonly step: IFunction; readonly sweeper: IFunction };
  readonly queues: {
    readonly tickets: IQueue;
    readonly ticketsDlq: IQueue;
    readonly work: IQueue;
    readonly workDlq: IQueue;
    readonly results: IQueue;
  };
  /** Alarm thresholds for the age of the oldest message, per consumed queue. */
  readonly oldestMessageAge: { readonly tickets: Duration; readonly work: Duration };
  /** Minutes in a row with a stalled session before the alarm fires. */
  readonly stalledMinutes: number;
  /** Step function errors (unhandled exceptions, timeouts) per invocation, in percent, over 5 minutes. */
  readonly stepErrorRatePercent: number;
  /** Where alarms (and their recoveries) are published; none when undefined. */
  readonly alarmTopic?: ITopic | undefined;
  /** The dashboard's name; CloudFormation generates one when undefined. */
  readonly dashboardName?: string | undefined;
}

/**
 * Baton's CloudWatch dashboard and alarms: throughput, legs per turn, recoveries, lease
 * conflicts, outcomes, tokens, DLQ depth, oldest message age and stalled sessions; alarms on a
 * non-empty DLQ, stalled sessions, the step error rate and the oldest message age.
 */
export class BatonMonitoring extends Construct {
  readonly dashboard: Dashboard;
  readonly alarms: {
    readonly ticketsDlqNotEmpty: Alarm;
    readonly workDlqNotEmpty: Alarm;
    readonly stalledSessions: Alarm;
    readonly stepErrorRate: Alarm;
    readonly sweeperErrors: Alarm;
    readonly ticketsOldestMessage: Alarm;
    readonly workOldestMessage: Alarm;
  };

  constructor(scope: Construct, id: string, props: BatonMonitoringProps) {
    super(scope, id);
    const { functions, queues } = props;

    const dlqNotEmpty = (alarmId: string, dlq: IQueue, what: string) =>
      new Alarm(this, alarmId, {
        alarmDescription: `The ${what} DLQ holds messages: see the runbook (docs/DEPLOY.md, "DLQ redrive").`,
        metric: dlq.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: Stats.MAXIMUM }),
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    const oldestMessage = (alarmId: string, queue: IQueue, threshold: Duration, what: string) =>
      new Alarm(this, alarmId, {
        alarmDescription: `The oldest ${what} message is older than ${threshold.toHumanString()}: a backlog or a failing consumer.`,
        metric: queue.metricApproximateAgeOfOldestMessage({ period: PERIOD, statistic: Stats.MAXIMUM }),
        threshold: threshold.toSeconds(),
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });

    const stalled = batonMetric(BATON_METRIC.stalledSessions, Stats.MAXIMUM);
    const stepErrors = functions.step.metricErrors({ period: Duration.minutes(5), statistic: Stats.SUM });
    const stepInvocations = functions.step.metricInvocations({ period: Duration.minutes(5), statistic: Stats.SUM });
    const stepErrorRate = new MathExpression({
      expression: 'IF(invocations > 0, 100 * errors / invocations, 0)',
      usingMetrics: { errors: stepErrors, invocations: stepInvocations },
      label: 'step error rate (%)',
      period: Duration.minutes(5),
    });

    this.alarms = {
      ticketsDlqNotEmpty: dlqNotEmpty('TicketsDlqNotEmpty', queues.ticketsDlq, 'tickets'),
      workDlqNotEmpty: dlqNotEmpty('WorkDlqNotEmpty', queues.workDlq, 'work'),
      stalledSessions: new Alarm(this, 'StalledSessions', {
        alarmDescription:
          'Sessions overdue for recovery, or no report from the sweeper at all (missing data breaches): see the runbook, "A stalled session".',
        metric: stalled,
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: props.stalledMinutes,
        datapointsToAlarm: props.stalledMinutes,
        // The sweeper reports every minute, zero included: silence means the sweeper is not running.
        treatMissingData: TreatMissingData.BREACHING,
      }),
      stepErrorRate: new Alarm(this, 'StepErrorRate', {
        alarmDescription: `More than ${props.stepErrorRatePercent}% of step invocations failed (unhandled errors or timeouts) over 5 minutes.`,
        metric: stepErrorRate,
        threshold: props.stepErrorRatePercent,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      sweeperErrors: new Alarm(this, 'SweeperErrors', {
        alarmDescription: 'The sweeper failed three minutes in a row: crashed sessions are not being recovered.',
        metric: functions.sweeper.metricErrors({ period: PERIOD, statistic: Stats.SUM }),
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      ticketsOldestMessage: oldestMessage(
        'TicketsOldestMessage',
        queues.tickets,
        props.oldestMessageAge.tickets,
        'ticket',
      ),
      workOldestMessage: oldestMessage('WorkOldestMessage', queues.work, props.oldestMessageAge.work, 'kick'),
    };
    if (props.alarmTopic) {
      const action = new SnsAction(props.alarmTopic);
      for (const alarm of Object.values(this.alarms)) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
    }

    this.dashboard = new Dashboard(this, 'Dashboard', {
      ...(props.dashboardName ? { dashboardName: props.dashboardName } : {}),
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown:
          '# Baton\nThroughput, recoveries and health of the durable agent runtime. Runbook: docs/DEPLOY.md in the Baton repository.',
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      graph('Throughput (per minute)', [
        batonMetric(BATON_METRIC.steps),
        batonMetric(BATON_METRIC.legs),
        batonMetric(BATON_METRIC.yields),
        outcomesTotal('turns finished'),
      ]),
      graph('Legs per finished turn', [
        new MathExpression({
          expression: 'IF(turns > 0, legs / turns, 0)',
          usingMetrics: { legs: batonMetric(BATON_METRIC.legs), turns: outcomesTotal('turns') },
          label: 'legs per turn',
          period: PERIOD,
        }),
      ]),
      graph(
        'Outcomes by status',
        OUTCOME_STATUSES.map((status) => outcomes(status)),
      ),
    );
    this.dashboard.addWidgets(
      graph('Recoveries and lease conflicts', [
        batonMetric(BATON_METRIC.recoveries),
        batonMetric(BATON_METRIC.leaseConflicts),
        batonMetric(BATON_METRIC.duplicateKicksDropped),
      ]),
      graph('Stalled sessions (max)', [stalled]),
      graph('Step duration (ms)', [
        batonMetric(BATON_METRIC.stepDuration, Stats.percentile(50)),
        batonMetric(BATON_METRIC.stepDuration, Stats.percentile(99)),
      ]),
    );
    this.dashboard.addWidgets(
      graph('Tokens', [batonMetric(BATON_METRIC.inputTokens), batonMetric(BATON_METRIC.outputTokens)]),
      graph('Bytes journaled', [batonMetric(BATON_METRIC.bytesJournaled)]),
      new SingleValueWidget({
        title: 'DLQ depth',
        metrics: [
          queues.ticketsDlq.metricApproximateNumberOfMessagesVisible({ label: 'tickets DLQ', period: PERIOD }),
          queues.workDlq.metricApproximateNumberOfMessagesVisible({ label: 'work DLQ', period: PERIOD }),
        ],
        width: 8,
        height: 6,
      }),
    );
    this.dashboard.addWidgets(
      graph('Oldest message age (s)', [
        queues.tickets.metricApproximateAgeOfOldestMessage({ label: 'tickets', period: PERIOD }),
        queues.work.metricApproximateAgeOfOldestMessage({ label: 'work', period: PERIOD }),
        queues.results.metricApproximateAgeOfOldestMessage({ label: 'results', period: PERIOD }),
      ]),
      graph('Function errors and throttles', [
        functions.intake.metricErrors({ label: 'intake errors', period: PERIOD }),
        functions.step.metricErrors({ label: 'step errors', period: PERIOD }),
        functions.sweeper.metricErrors({ label: 'sweeper errors', period: PERIOD }),
        functions.step.metricThrottles({ label: 'step throttles', period: PERIOD }),
      ]),
      graph('Step error rate (%)', [stepErrorRate]),
    );
  }
}

function batonMetric(metricName: string, statistic: string = Stats.SUM): Metric {
  return new Metric({
    namespace: METRICS_NAMESPACE,
    metricName,
    dimensionsMap: { service: SERVICE_NAME },
    statistic,
    period: PERIOD,
  });
}

function outcomes(status: (typeof OUTCOME_STATUSES)[number]): Metric {
  return new Metric({
    namespace: METRICS_NAMESPACE,
    metricName: BATON_METRIC.outcomes,
    dimensionsMap: { service: SERVICE_NAME, status },
    statistic: Stats.SUM,
    period: PERIOD,
    label: status,
  });
}

function outcomesTotal(label: string): MathExpression {
  const usingMetrics: Record<string, IMetric> = {};
  for (const status of OUTCOME_STATUSES) usingMetrics[status] = outcomes(status);
  return new MathExpression({
    expression: OUTCOME_STATUSES.map((status) => `FILL(${status}, 0)`).join(' + '),
    usingMetrics,
    label,
    period: PERIOD,
  });
}

function graph(title: string, left: IMetric[]): GraphWidget {
  return new GraphWidget({ title, left, width: 8, height: 6 });
}
