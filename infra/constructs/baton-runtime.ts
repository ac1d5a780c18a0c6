import { existsSync } from 'node:fs';
import { dirname, extname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, Lazy, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { ArnPrincipal, type IGrantable, type IRole, PolicyStatement, Role } from 'aws-cdk-lib/aws-iam';
import { type FunctionUrl, FunctionUrlAuthType } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, type IBucket, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ScheduleDefinition } from '../../lib/agent/define-schedule.ts';
import {
  ANY_TENANT,
  API_ROLES,
  ENV,
  NAME_PATTERN,
  RUNTIME_DEFAULTS,
  SESSION_TABLE,
  TENANT_PATTERN,
  visibilityTimeoutSeconds,
} from '../../lib/core/resources.ts';
import type { TenantLimits } from '../../lib/core/tenant-limits.ts';
import { SERVICE_NAME_ENV } from '../../lib/telemetry/metric-names.ts';
import { BatonFunction } from './baton-function.ts';
import { BatonQueues } from './baton-queues.ts';
import { BatonSchedules } from './baton-schedules.ts';
import { grantModelInvoke, grantTokenCount, type ModelGrantOptions } from './model-grants.ts';
import { BatonMonitoring } from './monitoring.ts';
import { createSessionTable } from './session-table.ts';

/** The repository root (or the package's dist/): Baton's own functions/ are found from here, wherever the app runs. */
const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FUNCTIONS_DIR = join(PROJECT_ROOT, 'functions');
/** `.ts` in the repository, `.js` in the installed package. */
const SOURCE_EXTENSION = extname(fileURLToPath(import.meta.url));

/** Tickets per intake invocation: each is a few writes and a send, handled concurrently. */
const INTAKE_BATCH_SIZE = 10;
/**
 * The shortest renewal period the runtime can keep: a renewal must land at least the tolerated
 * clock skew (MAX_CLOCK_SKEW_MS, 1 s, lib/core/budget.ts) before the lease counts as expired.
 */
const MIN_RENEWAL_INTERVAL = Duration.seconds(1);
/** The runtime renews every TTL/3, so one lost renewal never loses the lease (lib/core/lease.ts). */
const RENEWALS_PER_TTL = 3;
/** Lambda's hard limit on a function's timeout. */
const LAMBDA_MAX_TIMEOUT = Duration.minutes(15);
/** Schedules fire at most once a minute; the sweeper polls for most of that minute while there is something to watch, else once. */
const SWEEP_SCHEDULE_PERIOD = Duration.minutes(1);
const SWEEP_WINDOW = Duration.seconds(55);
/** Room after the sweep window for the last poll and the metrics flush. */
const SWEEPER_TIMEOUT_MARGIN = Duration.seconds(15);
/** The API answers within this; an events request waits at most 20 s for news (functions/api.ts). */
const API_TIMEOUT = Duration.seconds(30);
/** Lambda keeps at least this much of an account's concurrency unreserved; a reservation that leaves less fails to deploy. */
const LAMBDA_MIN_UNRESERVED = 100;
/** Lambda's default concurrency quota per account and region. */
const DEFAULT_ACCOUNT_CONCURRENCY = 1_000;
/** Scheduled sweeper runs that may overlap (a run lasts 70 s, the schedule fires every minute). */
const SWEEPER_CONCURRENCY = 2;
const API_MEMORY_MB = 512;
/** An S3 object must outlive the journal entry pointing to it; DynamoDB's TTL deletion lags by up to days. */
const PAYLOAD_RETENTION_GRACE_DAYS = 2;

/**
 * What agentEnvironment may not set, each with why: the names Baton sets on its functions
 * (lib/core/resources.ts ENV; the tracer, BATON_TRACING, is the team's choice) and its fault and
 * crash-point switches; Powertools' (the service name is the dimension the alarms watch); the AWS
 * SDK's and Lambda's (an endpoint override would send every store and queue call elsewhere); and
 * NODE_OPTIONS, which the functions set (source maps) and which could load code. Agent-facing
 * names of Baton's own, such as BATON_BEDROCK_MODEL_ID, stay the team's to set.
 */
const BATON_SET_ENV: ReadonlySet<string> = new Set([
  ...Object.values(ENV).filter((name) => name !== ENV.tracing),
  'BATON_FAULTS',
  'BATON_FAILPOINTS_FILE',
]);
const RESERVED_ENV_PREFIXES: readonly { readonly prefix: string; readonly why: string }[] = [
  { prefix: 'POWERTOOLS_', why: 'Powertools settings: the service name is the dimension the alarms watch' },
  { prefix: 'AWS_', why: "the AWS SDK's and Lambda's: an endpoint override would send the runtime's calls elsewhere" },
  { prefix: 'NODE_OPTIONS', why: 'set by the functions, and able to load code' },
];

/** Why agentEnvironment may not set this name, or undefined when it may. */
function reservedEnv(name: string): string | undefined {
  if (BATON_SET_ENV.has(name)) return "reserved for Baton's own configuration";
  const reserved = RESERVED_ENV_PREFIXES.find((r) => name.toUpperCase().startsWith(r.prefix));
  return reserved && `${reserved.prefix}* variables are ${reserved.why}`;
}

/** A producer of tickets and the tenants it may submit for. */
export interface BatonProducer {
  /**
   * Who sends, as SQS reports a record's SenderId: a role's unique id (`role.roleId`, `AROA…`;
   * a session of the role sends as `AROA…:session`), an IAM user's id (`AIDA…`), or an account id.
   */
  readonly sender: string;
  /** Tenant names it may use; `'*'` for every tenant. */
  readonly tenants: readonly string[];
}

/** What a caller of the HTTP API may do (see `apiTenants`). */
export type ApiRole = (typeof API_ROLES)[number];

/**
 * One API caller's grant: the tenants it sees and its roles, or its tenants alone, which grants
 * every role (the form from before roles existed).
 */
export type ApiGrant =
  | readonly string[]
  | '*'
  | { readonly tenants: readonly string[] | '*'; readonly roles: readonly ApiRole[] | '*' };

/** What a team tunes; every field has a default. */
export interface BatonRuntimeProps {
  /**
   * Path of the team's module that exports `agents` (an agent registry) for Baton's own handler
   * files, which import it as `#agents`, mapped at bundle time. There is no default: without
   * `handlers`, a missing or absent module is an error at synth.
   * @default none (required unless `handlers` are given)
   */
  readonly agentsEntry?: string;
  /**
   * The team's own handler files (each exports `handler`, made by `createIntakeHandler({ agents })`
   * and its siblings from `@baton-run/baton/aws`); these are bundled instead of Baton's, and import the agents
   * themselves (so `agentsEntry` is refused alongside them). The way an installed package is used.
   * @default Baton's functions/, bundled with `agentsEntry`
   */
  readonly handlers?: {
    readonly intake: string;
    readonly step: string;
    readonly sweeper: string;
    /** The HTTP API's handler (`createApiHandler` from `@baton-run/baton/aws`'s API module). */
    readonly api: string;
  };
  /**
   * The folder with the package-lock.json the bundles are built from.
   * @default the directory the CDK app runs in when `handlers` are given, else Baton's own root
   */
  readonly projectRoot?: string;
  /**
   * Timeout of the step function: the length of one leg. A leg yields `budgetReserve` before it.
   * @default 5 minutes (RUNTIME_DEFAULTS.functionTimeoutMs)
   */
  readonly functionTimeout?: Duration;
  /**
   * Timeout of the intake function (a few writes per ticket).
   * @default 30 seconds (RUNTIME_DEFAULTS.intakeTimeoutMs)
   */
  readonly intakeTimeout?: Duration;
  /**
   * Time kept back at the end of each leg to checkpoint and hand off.
   * @default 5 seconds (RUNTIME_DEFAULTS.reserveMs)
   */
  readonly budgetReserve?: Duration;
  /**
   * Lease time to live: a crashed leg's session is recovered about this long (plus a sweep
   * interval) after its last renewal, or by the next scheduled sweeper run when the lease was
   * taken while the sweeper had nothing to watch (within a minute of the acquire).
   * @default 30 seconds (RUNTIME_DEFAULTS.leaseTtlMs)
   */
  readonly leaseTtl?: Duration;
  /**
   * How often the sweeper polls for expired leases within each scheduled invocation.
   * @default 5 seconds (RUNTIME_DEFAULTS.sweepIntervalMs)
   */
  readonly sweepInterval?: Duration;
  /**
   * Maximum concurrent invocations of each SQS event source (intake and step), 2 to 1000.
   * @default 10
   */
  readonly maxConcurrency?: number;
  /**
   * Kicks per step invocation, 1 to 10. The kicks of one batch run concurrently and share one
   * invocation's deadline and memory; 1 keeps each leg alone in its invocation. (Intake takes
   * tickets 10 at a time: each is a few writes.)
   * @default 1
   */
  readonly batchSize?: number;
  /**
   * Days a finished session's items (and payload objects) are kept before they expire.
   * @default 30 (RUNTIME_DEFAULTS.retentionDays)
   */
  readonly retentionDays?: number;
  /**
   * Memory of the intake and step functions, in MB (CPU scales with it).
   * @default 1024
   */
  readonly memorySize?: number;
  /**
   * Where alarms are published.
   * @default no alarm actions (the alarms still show in the console)
   */
  readonly alarmTopic?: ITopic;
  /**
   * A bucket for the payload bucket's server access logs.
   * @default none (CloudTrail data events are the audit trail if one is needed)
   */
  readonly accessLogsBucket?: IBucket;
  /**
   * Extra environment for the intake and step functions (what the agents read, e.g. a model id).
   * Names the runtime relies on are refused: the `BATON_*` names Baton sets (the tracer,
   * `BATON_TRACING`, is yours to choose), `POWERTOOLS_*`, `AWS_*` (endpoint overrides included) and
   * `NODE_OPTIONS`.
   * @default none
   */
  readonly agentEnvironment?: Record<string, string>;
  /**
   * Binds tenants to producers: intake refuses (with a failed result, writing nothing under the
   * tenant) a ticket whose sender is not listed or is not listed for the ticket's tenant. The HTTP
   * API's own role is added for every tenant: the API admits a caller only to its `apiTenants`.
   * @default none: every producer that may send to the tickets queue may use every tenant
   */
  readonly producers?: readonly BatonProducer[];
  /**
   * Fair sharing between tenants: per tenant (or `*` for every tenant not named), `maxRunning`
   * sessions at once (the rest wait in line, holding no compute, and start in order of
   * acceptance as slots free) and `modelCallsPerMinute` (also per model id with
   * `modelCallsPerMinuteByModel`; `burst` calls may be saved up) shared by every worker. A limit
   * reached makes a session wait, never fail. Passed to the step function as BATON_TENANT_LIMITS.
   * @example { acme: { maxRunning: 10, modelCallsPerMinute: 120 }, '*': { maxRunning: 50 } }
   * @default none: no tenant is limited
   */
  readonly tenantLimits?: TenantLimits;
  /**
   * Retention of the functions' log groups.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * What happens to the table, bucket, queues and log groups when the stack is deleted.
   * RETAIN also turns on the table's deletion protection.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Who may call the HTTP API, which tenants each sees and what it may do there: IAM principal
   * ARN (a role, a user, or an assumed role's role) → `{ tenants, roles }`, tenants being names
   * or `'*'`, roles some of `submit`, `converse` (send, inject, steer), `approve`, `operate`
   * (cancel, release, resolve) and `read`, or `'*'`. A tenant list alone grants every role. Each
   * principal is granted `lambda:InvokeFunctionUrl` on the API's function URL (IAM auth); no one
   * else can call it. The roles that run agents (intake, step) are refused: an agent never
   * decides its own approval.
   * @default {} (the API is deployed; nobody may call it)
   */
  readonly apiTenants?: Readonly<Record<string, ApiGrant>>;
  /**
   * Bedrock model or cross-region inference profile ids the agents call: the step function may
   * invoke exactly these (see `grantModelInvoke`).
   * @default none
   */
  readonly bedrockModels?: readonly string[];
  /**
   * Concurrent executions reserved for the API function, which also caps it: however many long
   * polls its callers hold, the API never takes the concurrency intake and the step function
   * draw from. Refused when the account could not then keep what intake and step may run at once
   * (`maxConcurrency` each, plus the sweeper) unreserved, or Lambda's floor of 100, or when one
   * caller's streams (`apiStreamsPerCaller`) would fill it.
   * @default 20 (RUNTIME_DEFAULTS.apiReservedConcurrency)
   */
  readonly apiReservedConcurrency?: number;
  /**
   * Event streams (events requests that wait, up to 20 s each) one API caller may hold open at
   * once, counted across every invocation; one more is answered 429 `too_many_streams`. An
   * assumed role's sessions count as the role.
   * @default 4 (RUNTIME_DEFAULTS.apiStreamsPerCaller)
   */
  readonly apiStreamsPerCaller?: number;
  /**
   * The account's Lambda concurrency quota in the stack's region, against which
   * `apiReservedConcurrency` is checked at synth.
   * @default 1000 (Lambda's default quota)
   */
  readonly accountConcurrency?: number;
  /**
   * The `service` of the functions' logs and the `service` dimension of their metrics, which the
   * dashboard and alarms watch. Unique per deployment, so two stacks in one account never mix metrics.
   * @default the stack's name and the construct's path in it, e.g. `MyStack/Baton`
   */
  readonly serviceName?: string;
  /**
   * Recurring tickets (`defineSchedule`): EventBridge Scheduler puts each one's ticket on the
   * tickets queue at its fire times, with the fire time in the ticket id. With `producers` set,
   * the schedules' role is bound to their tenants.
   * @default none
   */
  readonly schedules?: readonly ScheduleDefinition[];
}

/**
 * Baton on AWS: the tickets, work and results queues (with DLQs), the session table, the payload
 * bucket, the intake, step and sweeper functions with least-privilege grants, the sweeper's
 * schedule, the HTTP API behind an IAM-authenticated function URL, and a dashboard with alarms.
 *
 * @example
 * new BatonRuntime(this, 'Baton', { agentsEntry: join(import.meta.dirname, 'agents.ts'), alarmTopic });
 */
export class BatonRuntime extends Construct {
  readonly table: Table;
  readonly bucket: Bucket;
  readonly ticketsQueue: Queue;
  readonly ticketsDlq: Queue;
  readonly workQueue: Queue;
  readonly workDlq: Queue;
  readonly resultsQueue: Queue;
  readonly intakeFunction: BatonFunction;
  readonly stepFunction: BatonFunction;
  readonly sweeperFunction: BatonFunction;
  /** The HTTP API (the same handler `baton dev` serves), behind `apiUrl`. */
  readonly apiFunction: BatonFunction;
  /** The API's function URL, IAM-authenticated (SigV4, service `lambda`). */
  readonly apiUrl: FunctionUrl;
  readonly monitoring: BatonMonitoring;
  /** The `service` dimension the functions' metrics carry (see `serviceName`). */
  readonly serviceName: string;
  /** Principal ARN → tenants and roles, for the API; grows with `grantInvokeApi` until synth. */
  readonly #apiTenants: Record<string, ApiGrant>;
  readonly #queues: BatonQueues;
  /** Tenants with results of their own, by tenant; grows with `resultsQueueFor` until synth. */
  readonly #tenantResults = new Map<string, Queue>();
  /** The producers map intake enforces (undefined: none, one trust domain); grows with `grantSubmitTickets`. */
  readonly #producers: BatonProducer[] | undefined;

  constructor(scope: Construct, id: string, props: BatonRuntimeProps = {}) {
    super(scope, id);
    const settings = resolveSettings(props);
    this.serviceName = props.serviceName ?? defaultServiceName(this);
    this.#apiTenants = { ...settings.apiTenants };

    this.table = createSessionTable(this, 'Sessions', { removalPolicy: settings.removalPolicy });
    this.bucket = this.#payloadBucket(settings, props.accessLogsBucket);
    const queues = new BatonQueues(this, 'Queues', {
      consumerTimeouts: { tickets: settings.intakeTimeout, work: settings.functionTimeout },
      removalPolicy: settings.removalPolicy,
    });
    this.#queues = queues;
    this.ticketsQueue = queues.tickets;
    this.ticketsDlq = queues.ticketsDlq;
    this.workQueue = queues.work;
    this.workDlq = queues.workDlq;
    this.resultsQueue = queues.results;

    const shared = {
      [ENV.table]: this.table.tableName,
      [ENV.workQueueUrl]: this.workQueue.queueUrl,
      [ENV.resultsQueueUrl]: this.resultsQueue.queueUrl,
      [ENV.leaseTtlMs]: String(settings.leaseTtl.toMilliseconds()),
      [ENV.reserveMs]: String(settings.budgetReserve.toMilliseconds()),
      [ENV.retentionDays]: String(settings.retentionDays),
      // The leg length, for the cold-start check that every agent's step fits a leg (all functions load the agents).
      [ENV.functionTimeoutMs]: String(settings.functionTimeout.toMilliseconds()),
      [SERVICE_NAME_ENV]: this.serviceName,
    };
    const fn = (
      name: 'intake' | 'step' | 'sweeper' | 'api',
      timeout: Duration,
      memorySize: number,
      environment: Record<string, string>,
      reservedConcurrentExecutions?: number,
    ) =>
      new BatonFunction(this, `${name[0]!.toUpperCase()}${name.slice(1)}`, {
        entry: props.handlers ? resolve(props.handlers[name]) : join(FUNCTIONS_DIR, `${name}${SOURCE_EXTENSION}`),
        agentsEntry: settings.agentsEntry,
        fromSource: SOURCE_EXTENSION === '.ts',
        projectRoot: props.projectRoot ?? (props.handlers ? process.cwd() : PROJECT_ROOT),
        timeout,
        memorySize,
        environment: { ...shared, ...environment },
        logRetention: settings.logRetention,
        removalPolicy: settings.removalPolicy,
        description: `Baton ${name} (${this.node.path})`,
        reservedConcurrentExecutions,
      });
    const withAgents = { ...props.agentEnvironment, [ENV.bucket]: this.bucket.bucketName };
    this.intakeFunction = fn('intake', settings.intakeTimeout, settings.memorySize, {
      ...withAgents,
      [ENV.ticketsQueueUrl]: this.ticketsQueue.queueUrl,
    });
    this.stepFunction = fn('step', settings.functionTimeout, settings.memorySize, {
      ...withAgents,
      // Only legs claim slots and take model-call tokens.
      ...(props.tenantLimits === undefined ? {} : { [ENV.tenantLimits]: JSON.stringify(props.tenantLimits) }),
    });
    this.sweeperFunction = fn('sweeper', settings.sweepWindow.plus(SWEEPER_TIMEOUT_MARGIN), 256, {
      [ENV.sweepIntervalMs]: String(settings.sweepInterval.toMilliseconds()),
      [ENV.sweepWindowMs]: String(settings.sweepWindow.toMilliseconds()),
    });

    // The API loads the agents (with what they read at import) to admit inputs; it runs none.
    this.apiFunction = fn(
      'api',
      API_TIMEOUT,
      API_MEMORY_MB,
      {
        ...props.agentEnvironment,
        [ENV.ticketsQueueUrl]: this.ticketsQueue.queueUrl,
        [ENV.bucket]: this.bucket.bucketName,
        // Lazy: grantInvokeApi adds principals after construction.
        [ENV.apiTenants]: Lazy.string({ produce: () => JSON.stringify(this.#apiTenants) }),
        [ENV.apiStreamsPerCaller]: String(settings.apiStreamsPerCaller),
      },
      // Reserved, hence capped: the API's long polls cannot take the step function's concurrency.
      settings.apiReservedConcurrency,
    );
    for (const principal of Object.keys(settings.apiTenants)) this.#refuseAgentRunner(principal);
    this.apiUrl = this.#exposeApi(settings.apiTenants);
    if (props.producers !== undefined) {
      // The API submits its callers' tickets under its own role, having checked their tenants
      // (apiTenants): intake lets that role use every tenant, so the two maps never disagree.
      const api = { sender: (this.apiFunction.role as Role).roleId, tenants: [ANY_TENANT] };
      this.#producers = [...props.producers, api];
      const producers = this.#producers;
      this.intakeFunction.function.addEnvironment(
        ENV.producers,
        Lazy.string({ produce: () => producersJson(producers) }),
      );
    }

    this.#consume(this.intakeFunction, this.ticketsQueue, INTAKE_BATCH_SIZE, settings);
    this.#consume(this.stepFunction, this.workQueue, settings.batchSize, settings);
    this.#grantLeastPrivilege();
    this.#scheduleSweeper();
    if (props.schedules !== undefined && props.schedules.length > 0) {
      const { role } = new BatonSchedules(this, 'Schedules', {
        schedules: props.schedules,
        ticketsQueue: this.ticketsQueue,
        ticketsDlq: this.ticketsDlq,
      });
      this.#mapProducer(role, [...new Set(props.schedules.map((s) => s.tenant))]);
    }
    for (const modelId of props.bedrockModels ?? []) this.grantModelInvoke(modelId);

    this.monitoring = new BatonMonitoring(this, 'Monitoring', {
      functions: {
        intake: this.intakeFunction.function,
        step: this.stepFunction.function,
        sweeper: this.sweeperFunction.function,
      },
      queues: queues,
      // A message older than its queue's visibility timeout has been redelivered, or waits without a consumer.
      oldestMessageAge: {
        tickets: visibilityOf(settings.intakeTimeout),
        work: visibilityOf(settings.functionTimeout),
      },
      stalledMinutes: 5,
      stepErrorRatePercent: 5,
      alarmTopic: props.alarmTopic,
      serviceName: this.serviceName,
    });
  }

  /**
   * Lets a producer submit tickets: send to the tickets queue, and put a large input in the
   * payload bucket under the ticket prefix (`tickets/{tenant}/`) of each of its tenants only.
   * Its tenants are `tenants` when given, else those `producers` maps its role's id to, else
   * every tenant. With `producers` set, a role granted with `tenants` is mapped to them too, so
   * the queue and the bucket bind it alike.
   */
  grantSubmitTickets(grantee: IGrantable, options: { readonly tenants?: readonly string[] } = {}): void {
    for (const tenant of options.tenants ?? []) if (tenant !== ANY_TENANT) checkTenant(tenant, 'grantSubmitTickets');
    this.ticketsQueue.grantSendMessages(grantee);
    const tenants = options.tenants ?? this.#mappedTenants(grantee);
    const prefixes =
      tenants === undefined || tenants.includes(ANY_TENANT) ? ['tickets'] : tenants.map((t) => `tickets/${t}`);
    allow(
      grantee,
      ['s3:PutObject'],
      prefixes.map((prefix) => this.bucket.arnForObjects(`${prefix}/*`)),
    );
    for (const prefix of prefixes) this.#acknowledgePayloadKeys(grantee, `${prefix}/*`, `PutObject under ${prefix}/`);
    if (options.tenants !== undefined) this.#mapProducer(grantee, options.tenants);
  }

  /**
   * Lets a consumer read results: receive and delete from a results queue and read the answers
   * offloaded with them. With `tenant`, that tenant's own results queue (see `resultsQueueFor`)
   * and its answers only (`results/{tenant}/`); without, the shared queue and every result.
   */
  grantReadResults(grantee: IGrantable, options: { readonly tenant?: string } = {}): void {
    const { tenant } = options;
    const queue = tenant === undefined ? this.resultsQueue : this.resultsQueueFor(tenant);
    queue.grantConsumeMessages(grantee);
    this.#grantReadObjects(grantee, tenant === undefined ? 'results' : `results/${tenant}`);
  }

  /**
   * Lets a reader see sessions: their records, turns and journals, by id or by tenant, with
   * offloaded payloads — with `tenant`, that tenant's payloads only (`{tenant}/`). The table
   * grant is not narrowed: its session-id index is keyed by session, not tenant (give a
   * tenant's readers the API, which is).
   */
  grantReadSessions(grantee: IGrantable, options: { readonly tenant?: string } = {}): void {
    const tableArn = this.table.tableArn;
    const { bySessionId, byTenant } = SESSION_TABLE.indexes;
    allow(grantee, ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'], [tableArn]);
    allow(grantee, ['dynamodb:Query'], [`${tableArn}/index/${bySessionId.name}`, `${tableArn}/index/${byTenant.name}`]);
    if (options.tenant !== undefined) checkTenant(options.tenant, 'grantReadSessions');
    this.#grantReadObjects(grantee, options.tenant);
  }

  /**
   * The results queue of one tenant, created the first time it is asked for. From then on that
   * tenant's results go there instead of to `resultsQueue`, so a consumer granted it
   * (`grantReadResults(role, { tenant })`) reads that tenant's results and no other's.
   */
  resultsQueueFor(tenant: string): Queue {
    checkTenant(tenant, 'resultsQueueFor');
    const existing = this.#tenantResults.get(tenant);
    if (existing !== undefined) return existing;
    const queue = this.#queues.tenantResults(tenant);
    if (this.#tenantResults.size === 0) {
      // Lazy: the map grows with every tenant asked for until synth.
      const urls = Lazy.string({
        produce: () => JSON.stringify(Object.fromEntries([...this.#tenantResults].map(([t, q]) => [t, q.queueUrl]))),
      });
      for (const fn of [this.intakeFunction, this.stepFunction])
        fn.function.addEnvironment(ENV.tenantResultsQueueUrls, urls);
    }
    this.#tenantResults.set(tenant, queue);
    // Both publish results: step the turns' outcomes, intake the refusals of the tenant's own producers.
    for (const fn of [this.intakeFunction, this.stepFunction])
      allow(fn.function, ['sqs:SendMessage'], [queue.queueArn]);
    return queue;
  }

  /**
   * What the `baton` CLI needs against this stack (`baton --stack NAME …`) for every tenant: read
   * the stack's outputs, read sessions, submit tickets and read results, and cancel, message,
   * approve and resolve (a write to the session record and a kick). Give it to operators, not
   * to applications: those get the narrower grants or the API.
   */
  grantOperate(grantee: IGrantable): void {
    const stack = Stack.of(this);
    allow(grantee, ['cloudformation:DescribeStacks'], [stack.stackId]);
    this.grantReadSessions(grantee);
    this.grantSubmitTickets(grantee);
    this.grantReadResults(grantee);
    allow(grantee, ['dynamodb:PutItem', 'dynamodb:UpdateItem'], [this.table.tableArn]);
    this.workQueue.grantSendMessages(grantee);
  }

  /**
   * Lets a role call the HTTP API (SigV4 on the function URL), see `tenants` (`'*'` for all) and
   * do what `roles` allow (default: every role): the principal is granted
   * `lambda:InvokeFunctionUrl` and added to the API's map. The roles of the functions that run
   * agents are refused: an agent never decides its own approval.
   */
  grantInvokeApi(role: IRole, tenants: readonly string[] | '*', roles: readonly ApiRole[] | '*' = '*'): void {
    const grant: ApiGrant = { tenants, roles };
    checkApiTenants(role.roleArn, grant);
    this.#refuseAgentRunner(role.roleArn);
    this.#apiTenants[role.roleArn] = grant;
    this.apiFunction.function.grantInvokeUrl(role);
  }

  /** The agents run under the intake and step roles: none of them may call the API, where approvals are decided. */
  #refuseAgentRunner(principal: string): void {
    for (const fn of [this.intakeFunction, this.stepFunction])
      if (principal === fn.role.roleArn)
        throw new Error(
          `BatonRuntime: ${fn.function.node.id}'s role runs the agents and may not call the API: an agent never decides its own approval`,
        );
  }

  /**
   * Lets the step function (where the agents run) call a Bedrock model: `bedrock:InvokeModel` on
   * the foundation model in the stack's region, or, for a cross-region inference profile id
   * (`us.…`, `eu.…`, `apac.…`, `global.…`), on the profile and on the model it routes to, in the
   * profile's regions only and only through the profile (`options.regions` when they differ from
   * the geography's list in model-grants.ts). And `bedrock:CountTokens` on the model, which
   * compaction asks before a call that may outgrow the agent's context window.
   */
  grantModelInvoke(modelId: string, options: ModelGrantOptions = {}): void {
    grantModelInvoke(this.stepFunction.role, modelId, options);
    grantTokenCount(this.stepFunction.role, modelId);
  }

  /**
   * Payload objects under `prefix/` (every one without a prefix), and ListBucket so a missing one
   * reads as NoSuchKey, for keys under the same prefix only: a listing would name other tenants'
   * sessions.
   */
  #grantReadObjects(grantee: IGrantable, prefix: string | undefined): void {
    const keys = prefix === undefined ? '*' : `${prefix}/*`;
    allow(grantee, ['s3:GetObject'], [this.bucket.arnForObjects(keys)]);
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
        ...(prefix === undefined ? {} : { conditions: { StringLike: { 's3:prefix': [`${prefix}/*`] } } }),
      }),
    );
    this.#acknowledgePayloadKeys(grantee, keys, prefix === undefined ? 'GetObject' : `GetObject under ${prefix}/`);
  }

  /** The tenants `producers` maps a role to, if it is a role and is mapped. */
  #mappedTenants(grantee: IGrantable): readonly string[] | undefined {
    if (!(grantee instanceof Role)) return undefined;
    return this.#producers?.find((p) => p.sender === grantee.roleId)?.tenants;
  }

  /** With a producers map, a role granted for tenants is mapped to them (a role already mapped keeps its entry). */
  #mapProducer(grantee: IGrantable, tenants: readonly string[]): void {
    if (this.#producers === undefined || !(grantee instanceof Role)) return;
    if (this.#producers.some((p) => p.sender === grantee.roleId)) return;
    this.#producers.push({ sender: grantee.roleId, tenants });
  }

  /** A grantee of this app gets the payload-key wildcard acknowledged for the policy checks, with the reason. */
  #acknowledgePayloadKeys(grantee: IGrantable, keys: string, granted: string): void {
    const principal = grantee.grantPrincipal;
    if (!(principal instanceof Construct)) return;
    Validations.of(principal).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${logicalIdOf(this.bucket)}.Arn>/${keys}]`,
      reason: `Payload objects are keyed by tenant, session and content digest at run time; only ${granted} on the Baton payload bucket is granted.`,
    });
  }

  /** An SQS event source with partial batch responses: a failed record returns alone, the rest are deleted. */
  #consume(consumer: BatonFunction, queue: Queue, batchSize: number, settings: Settings): void {
    const source = new SqsEventSource(queue, {
      batchSize,
      maxConcurrency: settings.maxConcurrency,
      reportBatchItemFailures: true,
    });
    consumer.function.addEventSource(source);
    Validations.of(consumer.function).acknowledge({
      id: 'Serverless-LambdaEventSourceMappingDestination',
      reason:
        "SQS event source mappings take no on-failure destination (streams and Kafka do); a record that keeps failing goes to the source queue's DLQ after maxReceiveCount receives.",
    });
  }

  /** The grants, each function only the actions its code uses (see lib/adapters). */
  #grantLeastPrivilege(): void {
    const tableArn = this.table.tableArn;
    const sweepIndexArn = `${tableArn}/index/${SESSION_TABLE.indexes.sweep.name}`;
    const sendTo = (queues: Queue[]) => queues.map((q) => q.queueArn);
    // ListBucket makes S3 answer NoSuchKey instead of AccessDenied for a missing payload.
    const payloads = (grantee: IGrantable) => {
      allow(grantee, ['s3:GetObject', 's3:PutObject'], [this.bucket.arnForObjects('*')]);
      allow(grantee, ['s3:ListBucket'], [this.bucket.bucketArn]);
    };

    const intake = this.intakeFunction.function;
    // Rejected tickets publish a failed result; a large input is offloaded again as the turn's payload.
    allow(intake, ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], [tableArn]);
    allow(intake, ['sqs:SendMessage'], sendTo([this.workQueue, this.resultsQueue]));
    payloads(intake);

    const step = this.stepFunction.function;
    // BatchGetItem: a parent reads its tasks' records and turns in batches (read-tasks.ts).
    allow(
      step,
      ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'],
      [tableArn],
    );
    allow(step, ['sqs:SendMessage'], sendTo([this.workQueue, this.resultsQueue]));
    payloads(step);

    const sweeper = this.sweeperFunction.function;
    allow(sweeper, ['dynamodb:Query'], [sweepIndexArn]);
    allow(sweeper, ['sqs:SendMessage'], sendTo([this.workQueue]));

    const api = this.apiFunction.function;
    const { bySessionId, byTenant } = SESSION_TABLE.indexes;
    // Status, events, tasks, cancel and release read the record, the turn and the journal (tasks
    // and release the children's too), and bump the record (release marks it, and cancels the
    // children); send puts a turn and queues it, approve and resolve post to the inbox.
    allow(
      api,
      ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
      [tableArn],
    );
    allow(api, ['dynamodb:Query'], [`${tableArn}/index/${bySessionId.name}`, `${tableArn}/index/${byTenant.name}`]);
    // Submit sends tickets; cancel and release send kicks (to the session and its children).
    allow(api, ['sqs:SendMessage'], sendTo([this.ticketsQueue, this.workQueue]));
    // A large ticket input is put in the bucket; offloaded journal entries are read back.
    payloads(api);

    for (const fn of [this.intakeFunction, this.stepFunction, this.apiFunction])
      Validations.of(fn.role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${logicalIdOf(this.bucket)}.Arn>/*]`,
        reason:
          'Payload objects are keyed by session, seq and epoch, created at run time: object-level access needs the bucket/* resource. Only GetObject and PutObject are granted.',
      });
  }

  /** A function URL with IAM auth; only the mapped principals may invoke it. */
  #exposeApi(tenants: Readonly<Record<string, ApiGrant>>): FunctionUrl {
    const api = this.apiFunction.function;
    const url = api.addFunctionUrl({ authType: FunctionUrlAuthType.AWS_IAM });
    for (const principal of Object.keys(tenants)) api.grantInvokeUrl(new ArnPrincipal(principal));
    Validations.of(api).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason:
        'The API function is invoked synchronously through its function URL: the caller gets the error; there is no asynchronous event to dead-letter.',
    });
    return url;
  }

  #scheduleSweeper(): void {
    const sweeper = this.sweeperFunction.function;
    const rule = new Rule(this, 'SweepSchedule', {
      description: 'Starts the Baton sweeper every minute; it polls for expired leases within each run.',
      schedule: Schedule.rate(SWEEP_SCHEDULE_PERIOD),
    });
    // A failed run is superseded by the next tick: retrying it would only overlap.
    rule.addTarget(new LambdaFunction(sweeper, { retryAttempts: 0, maxEventAge: SWEEP_SCHEDULE_PERIOD }));
    Validations.of(rule).acknowledge({
      id: 'Serverless-EventBusDLQ',
      reason:
        'The schedule fires every minute and a missed tick is superseded by the next; the StalledSessions alarm treats a silent sweeper as breaching.',
    });
  }

  #payloadBucket(settings: Settings, accessLogsBucket: IBucket | undefined): Bucket {
    const bucket = new Bucket(this, 'Payloads', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: settings.removalPolicy,
      lifecycleRules: [
        { expiration: Duration.days(settings.retentionDays + PAYLOAD_RETENTION_GRACE_DAYS) },
        { abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      ...(accessLogsBucket
        ? { serverAccessLogsBucket: accessLogsBucket, serverAccessLogsPrefix: 'baton-payloads/' }
        : {}),
    });
    if (!accessLogsBucket)
      Validations.of(bucket).acknowledge({
        id: 'AwsSolutions-S1',
        reason:
          'Only Baton functions read and write payload objects (no public or cross-account access); pass accessLogsBucket to turn on server access logs, or use CloudTrail data events.',
      });
    return bucket;
  }
}

interface Settings {
  /** Absent when the team's own handlers import their agents. */
  readonly agentsEntry: string | undefined;
  readonly functionTimeout: Duration;
  readonly intakeTimeout: Duration;
  readonly budgetReserve: Duration;
  readonly leaseTtl: Duration;
  readonly sweepInterval: Duration;
  readonly sweepWindow: Duration;
  readonly maxConcurrency: number;
  readonly batchSize: number;
  readonly retentionDays: number;
  readonly memorySize: number;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  readonly apiTenants: Readonly<Record<string, ApiGrant>>;
  readonly apiReservedConcurrency: number;
  readonly apiStreamsPerCaller: number;
  readonly accountConcurrency: number;
}

/** Defaults applied and the combinations that cannot work refused, naming the prop. */
function resolveSettings(props: BatonRuntimeProps): Settings {
  const settings: Settings = {
    agentsEntry:
      props.agentsEntry === undefined
        ? undefined
        : isAbsolute(props.agentsEntry)
          ? props.agentsEntry
          : resolve(props.agentsEntry),
    functionTimeout: props.functionTimeout ?? Duration.millis(RUNTIME_DEFAULTS.functionTimeoutMs),
    intakeTimeout: props.intakeTimeout ?? Duration.millis(RUNTIME_DEFAULTS.intakeTimeoutMs),
    budgetReserve: props.budgetReserve ?? Duration.millis(RUNTIME_DEFAULTS.reserveMs),
    leaseTtl: props.leaseTtl ?? Duration.millis(RUNTIME_DEFAULTS.leaseTtlMs),
    sweepInterval: props.sweepInterval ?? Duration.millis(RUNTIME_DEFAULTS.sweepIntervalMs),
    sweepWindow: SWEEP_WINDOW,
    maxConcurrency: props.maxConcurrency ?? 10,
    batchSize: props.batchSize ?? 1,
    retentionDays: props.retentionDays ?? RUNTIME_DEFAULTS.retentionDays,
    memorySize: props.memorySize ?? 1024,
    logRetention: props.logRetention ?? RetentionDays.ONE_MONTH,
    removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    apiTenants: props.apiTenants ?? {},
    apiReservedConcurrency: props.apiReservedConcurrency ?? RUNTIME_DEFAULTS.apiReservedConcurrency,
    apiStreamsPerCaller: props.apiStreamsPerCaller ?? RUNTIME_DEFAULTS.apiStreamsPerCaller,
    accountConcurrency: props.accountConcurrency ?? DEFAULT_ACCOUNT_CONCURRENCY,
  };
  const ms = (d: Duration) => d.toMilliseconds();
  const refuse = (message: string) => {
    throw new Error(`BatonRuntime: ${message}`);
  };
  // The installed package ships no handler files of its own: the team's two-line files are bundled.
  if (props.handlers === undefined && !existsSync(FUNCTIONS_DIR))
    refuse(
      "pass handlers: { intake, step, sweeper, api } — your files exporting createIntakeHandler({ agents }) and its siblings from '@baton-run/baton/aws'",
    );
  for (const [name, file] of Object.entries(props.handlers ?? {}))
    if (!existsSync(resolve(file))) refuse(`handlers.${name}: ${resolve(file)} does not exist`);
  // No silent default agents: a deployment runs exactly the agents its team names.
  if (props.handlers === undefined && settings.agentsEntry === undefined)
    refuse('pass agentsEntry (your module exporting `agents`), or handlers that import your agents');
  if (props.handlers !== undefined && settings.agentsEntry !== undefined)
    refuse('agentsEntry is unused when handlers are given: your handler files import your agents');
  if (settings.agentsEntry !== undefined && !existsSync(settings.agentsEntry))
    refuse(`agentsEntry: ${settings.agentsEntry} does not exist`);
  if (props.serviceName !== undefined && !SERVICE_NAME_PATTERN.test(props.serviceName))
    refuse(`serviceName '${props.serviceName}' must be 1 to 255 printable characters`);
  if (ms(settings.functionTimeout) > ms(LAMBDA_MAX_TIMEOUT)) refuse('functionTimeout exceeds Lambda’s 15 minutes');
  if (ms(settings.intakeTimeout) > ms(LAMBDA_MAX_TIMEOUT)) refuse('intakeTimeout exceeds Lambda’s 15 minutes');
  if (ms(settings.budgetReserve) >= ms(settings.functionTimeout))
    refuse('budgetReserve must be shorter than functionTimeout, or no step ever fits a leg');
  if (ms(settings.sweepInterval) >= ms(settings.sweepWindow))
    refuse(`sweepInterval must be shorter than the sweep window (${settings.sweepWindow.toHumanString()})`);
  if (ms(settings.leaseTtl) < RENEWALS_PER_TTL * ms(MIN_RENEWAL_INTERVAL))
    refuse(
      `leaseTtl must be at least ${RENEWALS_PER_TTL} × ${MIN_RENEWAL_INTERVAL.toHumanString()}: the runtime renews every TTL/${RENEWALS_PER_TTL}, and a renewal needs ${MIN_RENEWAL_INTERVAL.toHumanString()} of clock-skew margin`,
    );
  if (!Number.isInteger(settings.maxConcurrency) || settings.maxConcurrency < 2 || settings.maxConcurrency > 1000)
    refuse('maxConcurrency must be an integer from 2 to 1000 (the SQS event source limits)');
  checkApiConcurrency(settings, refuse);
  if (!Number.isInteger(settings.batchSize) || settings.batchSize < 1 || settings.batchSize > 10)
    refuse('batchSize must be an integer from 1 to 10 (more needs a batching window)');
  if (!Number.isInteger(settings.retentionDays) || settings.retentionDays < 1)
    refuse('retentionDays must be a positive integer');
  for (const [principal, tenants] of Object.entries(settings.apiTenants)) checkApiTenants(principal, tenants);
  const senders = new Set<string>();
  for (const { sender, tenants } of props.producers ?? []) {
    if (senders.has(sender)) refuse(`producers: sender ${sender} is listed twice; list all its tenants in one entry`);
    senders.add(sender);
    if (tenants.length === 0) refuse(`producers: sender ${sender} has no tenants`);
    for (const tenant of tenants)
      if (tenant !== ANY_TENANT && !TENANT_PATTERN.test(tenant))
        refuse(
          `producers: tenant "${tenant}" of sender ${sender} must match ${NAME_PATTERN} (and not be "tickets" or "results") or be "${ANY_TENANT}"`,
        );
  }
  checkTenantLimits(props.tenantLimits, refuse);
  for (const name of Object.keys(props.agentEnvironment ?? {})) {
    const why = reservedEnv(name);
    if (why) refuse(`agentEnvironment may not set ${name}: ${why}`);
  }
  return settings;
}

/** Tenant limits name tenants (or `*`) and give positive numbers: a bad one fails the synth, not every leg's cold start. */
function checkTenantLimits(limits: TenantLimits | undefined, refuse: (message: string) => never): void {
  for (const [tenant, limit] of Object.entries(limits ?? {})) {
    if (tenant !== ANY_TENANT && !TENANT_PATTERN.test(tenant))
      refuse(
        `tenantLimits: tenant "${tenant}" must match ${NAME_PATTERN} (and not be "tickets" or "results") or be "${ANY_TENANT}"`,
      );
    const { maxRunning, modelCallsPerMinute, modelCallsPerMinuteByModel, burst } = limit;
    for (const [name, value, whole] of [
      ['maxRunning', maxRunning, true],
      ['burst', burst, true],
      ['modelCallsPerMinute', modelCallsPerMinute, false],
      ...Object.entries(modelCallsPerMinuteByModel ?? {}).map(
        ([model, v]) => [`modelCallsPerMinuteByModel.${model}`, v, false] as const,
      ),
    ] as const) {
      if (value === undefined) continue;
      if (!(Number.isFinite(value) && value > 0 && (!whole || Number.isInteger(value))))
        refuse(`tenantLimits: ${tenant}.${name} must be a positive ${whole ? 'integer' : 'number'}, got ${value}`);
    }
  }
}

/**
 * The API's reservation leaves the account what intake and the step function may run at once
 * (each event source's maxConcurrency, plus the sweeper), and at least Lambda's unreserved floor;
 * and one caller's streams cannot fill it, so another caller's approve or cancel still gets in.
 */
function checkApiConcurrency(settings: Settings, refuse: (message: string) => never): void {
  const { apiReservedConcurrency: reserved, apiStreamsPerCaller: streams, accountConcurrency: account } = settings;
  for (const [name, value] of Object.entries({
    apiReservedConcurrency: reserved,
    apiStreamsPerCaller: streams,
    accountConcurrency: account,
  }))
    if (!Number.isInteger(value) || value < 1) refuse(`${name} must be a positive integer, got ${value}`);
  if (streams >= reserved)
    refuse(
      `apiStreamsPerCaller (${streams}) must be below apiReservedConcurrency (${reserved}): one caller's streams would fill the API`,
    );
  const runtimeNeeds = 2 * settings.maxConcurrency + SWEEPER_CONCURRENCY;
  const keepUnreserved = Math.max(LAMBDA_MIN_UNRESERVED, runtimeNeeds);
  if (reserved > account - keepUnreserved)
    refuse(
      `apiReservedConcurrency (${reserved}) leaves ${account - reserved} of accountConcurrency (${account}) unreserved; ` +
        `intake and step need ${runtimeNeeds} at once (maxConcurrency ${settings.maxConcurrency} each, and the sweeper) ` +
        `and Lambda keeps at least ${LAMBDA_MIN_UNRESERVED}: reserve at most ${Math.max(0, account - keepUnreserved)}`,
    );
}

/** An API principal must be an IAM ARN (or a token that becomes one), its tenants '*' or names, its roles '*' or roles. */
function checkApiTenants(principal: string, grant: ApiGrant): void {
  if (!Token.isUnresolved(principal) && !/^arn:aws[\w-]*:(iam|sts)::\d{12}:/.test(principal))
    throw new Error(
      `BatonRuntime: apiTenants: '${principal}' is not an IAM principal ARN (arn:aws:iam::ACCOUNT:role/NAME)`,
    );
  const { tenants, roles }: { tenants: readonly string[] | '*'; roles: readonly string[] | '*' } =
    typeof grant === 'object' && 'tenants' in grant ? grant : { tenants: grant, roles: '*' };
  if (tenants !== '*' && (tenants.length === 0 || tenants.some((t) => !NAME_PATTERN.test(t))))
    throw new Error(
      `BatonRuntime: apiTenants: the tenants of ${principal} must be '*' or a non-empty list of tenant names`,
    );
  const known: readonly string[] = API_ROLES;
  if (roles !== '*' && (roles.length === 0 || roles.some((r) => !known.includes(r))))
    throw new Error(
      `BatonRuntime: apiTenants: the roles of ${principal} must be '*' or a non-empty list of ${API_ROLES.join(', ')}`,
    );
}

/** A tenant named to a grant must be one a ticket can name (not a payload bucket prefix of its own). */
function checkTenant(tenant: string, where: string): void {
  if (!TENANT_PATTERN.test(tenant))
    throw new Error(
      `BatonRuntime: ${where}: tenant "${tenant}" must match ${NAME_PATTERN} and not be "tickets" or "results"`,
    );
}

/** A `service` dimension value: printable, within CloudWatch's limits. */
const SERVICE_NAME_PATTERN = /^[\x21-\x7e][\x20-\x7e]{0,254}$/;

/** The stack's name and the construct's path below the stack: unique per deployment in an account and region. */
function defaultServiceName(runtime: Construct): string {
  const stack = Stack.of(runtime);
  const below = runtime.node.scopes.slice(stack.node.scopes.length).map((scope) => scope.node.id);
  return [stack.stackName, ...below].join('/');
}

function allow(grantee: IGrantable, actions: string[], resources: string[]): void {
  grantee.grantPrincipal.addToPrincipalPolicy(new PolicyStatement({ actions, resources }));
}

/**
 * The producers map as the JSON intake parses (lib/core/tenancy.ts). Built by concatenation so a
 * sender may be a token (a role's id, resolved at deploy time); ids hold no characters to escape.
 */
function producersJson(producers: readonly BatonProducer[]): string {
  const entries = producers.map(({ sender, tenants }) => `"${sender}":${JSON.stringify(tenants)}`);
  return `{${entries.join(',')}}`;
}

function visibilityOf(consumerTimeout: Duration): Duration {
  return Duration.seconds(visibilityTimeoutSeconds(consumerTimeout.toSeconds()));
}

function logicalIdOf(bucket: Bucket): string {
  return bucket.stack.getLogicalId(bucket.node.defaultChild as never);
}
