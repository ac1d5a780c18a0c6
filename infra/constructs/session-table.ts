import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { SESSION_TABLE } from '../../lib/core/resources.ts';

const ATTRIBUTE_TYPES = { S: AttributeType.STRING, N: AttributeType.NUMBER, B: AttributeType.BINARY } as const;
const PROJECTIONS = {
  KEYS_ONLY: ProjectionType.KEYS_ONLY,
  INCLUDE: ProjectionType.INCLUDE,
  ALL: ProjectionType.ALL,
} as const;

export interface SessionTableProps {
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The session table, built from the one shared definition (lib/core/resources.ts) the local
 * stack also builds from: on-demand, point-in-time recovery, TTL, AWS-managed encryption and the
 * sweep and bySessionId indexes (keys only: the runtime reads the pk and then the item itself)
 * and the byTenant index of the API's session list.
 */
export function createSessionTable(scope: Construct, id: string, props: SessionTableProps): Table {
  const table = new Table(scope, id, {
    partitionKey: { name: SESSION_TABLE.partitionKey, type: AttributeType.STRING },
    sortKey: { name: SESSION_TABLE.sortKey, type: AttributeType.STRING },
    billingMode: BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    timeToLiveAttribute: SESSION_TABLE.ttlAttribute,
    encryption: TableEncryption.AWS_MANAGED,
    removalPolicy: props.removalPolicy,
    deletionProtection: props.removalPolicy === RemovalPolicy.RETAIN,
  });
  const { sweep, bySessionId, byTenant } = SESSION_TABLE.indexes;
  table.addGlobalSecondaryIndex({
    indexName: sweep.name,
    partitionKey: { name: sweep.partitionKey, type: ATTRIBUTE_TYPES[sweep.partitionKeyType] },
    sortKey: { name: sweep.sortKey, type: ATTRIBUTE_TYPES[sweep.sortKeyType] },
    projectionType: PROJECTIONS[sweep.projection],
  });
  table.addGlobalSecondaryIndex({
    indexName: bySessionId.name,
    partitionKey: { name: bySessionId.partitionKey, type: ATTRIBUTE_TYPES[bySessionId.partitionKeyType] },
    projectionType: PROJECTIONS[bySessionId.projection],
  });
  table.addGlobalSecondaryIndex({
    indexName: byTenant.name,
    partitionKey: { name: byTenant.partitionKey, type: ATTRIBUTE_TYPES[byTenant.partitionKeyType] },
    sortKey: { name: byTenant.sortKey, type: ATTRIBUTE_TYPES[byTenant.sortKeyType] },
    projectionType: PROJECTIONS[byTenant.projection],
    nonKeyAttributes: [...byTenant.nonKeyAttributes],
  });
  return table;
}
