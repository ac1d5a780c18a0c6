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
import { METRIC, METRICS_NAMESPACE, OUTCOME_STATUSES, TENANT_METRICS } from '../../lib/telemetry/metric-names.ts';

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
  /** The `service` dimension the functions publish their metrics under (their POWERTOOLS_SERVICE_NAME). */
  readonly serviceName: string;
  /** The dashboard's name; CloudFormation generates one when undefined. */
  readonly dashboardName?: string | undefined;
}

/**
 * Baton's CloudWatch dashboard and alarms: throughput, legs per turn, recoveries, lease
 * conflicts, outcomes, tokens, DLQ depth, oldest message age, stalled sessions, conversation
 * messages, timers, live text writes, refused forged kicks and undelivered results; alarms on a
 * non-empty DLQ, stalled sessions, the step error rate, the oldest message age, any result given
 * up undelivered and any forged continuation refused.
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
    readonly resultsUndelivered: Alarm;
    readonly forgedKicksRefused: Alarm;
  };

  constructor(scope: Construct, id: string, props: BatonMonitoringProps) {
    super(scope, id);
    const { functions, queues } = props;
    const batonMetric = (metricName: string, statistic: string = Stats.SUM) =>
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { service: props.serviceName },
        statistic,
        period: PERIOD,
      });
    const outcomes = (status: string) =>
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName: METRIC.outcomes,
        dimensionsMap: { service: props.serviceName, status },
        statistic: Stats.SUM,
        period: PERIOD,
        label: status,
      });
    const outcomesTotal = (label: string) => {
      // Math variables are lowercase alphanumerics: `budget-exceeded` is not one.
      const variable = (status: string) => status.replace(/[^a-z0-9]/g, '');
      const usingMetrics: Record<string, IMetric> = {};
      for (const status of OUTCOME_STATUSES) usingMetrics[variable(status)] = outcomes(status);
      return new MathExpression({
        expression: OUTCOME_STATUSES.map((status) => `FILL(${variable(status)}, 0)`).join(' + '),
        usingMetrics,
        label,
        period: PERIOD,
      });
    };

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

    /** Any count above zero in a minute alarms: each one is an event an operator must look at. */
    const anyCount = (alarmId: string, metric: IMetric, description: string) =>
      new Alarm(this, alarmId, {
        alarmDescription: description,
        metric,
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });

    const stalled = batonMetric(METRIC.stalledSessions, Stats.MAXIMUM);
    const resultsUndelivered = batonMetric(METRIC.resultsUndelivered);
    const forgedKicksRefused = batonMetric(METRIC.forgedKicksRefused);
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
      resultsUndelivered: anyCount(
        'ResultsUndelivered',
        resultsUndelivered,
        'A turn finished but its result could not be published to the results queue after the retries: its consumer never hears. See the runbook (docs/DEPLOY.md, "Alarms").',
      ),
      forgedKicksRefused: anyCount(
        'ForgedKicksRefused',
        forgedKicksRefused,
        'A continuation without its holder\'s hand-off nonce was refused: something other than Baton writes to the work queue. See the runbook (docs/DEPLOY.md, "Alarms").',
      ),
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
        batonMetric(METRIC.steps),
        batonMetric(METRIC.legs),
        batonMetric(METRIC.yields),
        outcomesTotal('turns finished'),
      ]),
      graph('Legs per finished turn', [
        new MathExpression({
          expression: 'IF(turns > 0, legs / turns, 0)',
          usingMetrics: { legs: batonMetric(METRIC.legs), turns: outcomesTotal('turns') },
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
        batonMetric(METRIC.recoveries),
        batonMetric(METRIC.leaseConflicts),
        batonMetric(METRIC.duplicateKicksDropped),
      ]),
      graph('Stalled sessions (max)', [stalled]),
      graph('Step duration (ms)', [
        batonMetric(METRIC.stepDuration, Stats.percentile(50)),
        batonMetric(METRIC.stepDuration, Stats.percentile(99)),
      ]),
    );
    this.dashboard.addWidgets(
      graph('Tokens', [batonMetric(METRIC.inputTokens), batonMetric(METRIC.outputTokens)]),
      graph('Compactions (a transcript past its context threshold)', [batonMetric(METRIC.compactions)]),
      graph('Bytes journaled', [batonMetric(METRIC.bytesJournaled)]),
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
    this.dashboard.addWidgets(
      graph('Conversations and timers (per minute)', [
        batonMetric(METRIC.messagesDelivered),
        batonMetric(METRIC.timersWoken),
      ]),
      graph('Left to a newer build (rolling deploys)', [batonMetric(METRIC.newerJournalFormat)]),
      graph('Live model text writes', [batonMetric(METRIC.liveTextWrites), batonMetric(METRIC.liveTextWriteFailures)]),
      graph('Needs an operator (alarms above 0)', [resultsUndelivered, forgedKicksRefused]),
    );
    // Per tenant: a search finds each tenant's series, however many tenants there are.
    const byTenant = (metricName: string) =>
      new MathExpression({
        expression: `SEARCH('{${METRICS_NAMESPACE},service,tenant} MetricName="${metricName}" service="${props.serviceName}"', 'Sum', ${PERIOD.toSeconds()})`,
        usingMetrics: {},
        label: '',
        period: PERIOD,
      });
    this.dashboard.addWidgets(
      graph('Fair sharing: waits for a tenant slot, throttled model calls', [
        batonMetric(METRIC.tenantSlotWaits),
        batonMetric(METRIC.modelCallsThrottled),
      ]),
      ...TENANT_METRICS.map((name) => graph(`${name} by tenant`, [byTenant(name)])),
    );
  }
}

function graph(title: string, left: IMetric[]): GraphWidget {
  return new GraphWidget({ title, left, width: 8, height: 6 });
}
