import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Endpoints } from './emulators.ts';

/** Emulators accept any signature (DynamoDB Local insists on an alphanumeric key id); real credentials are never needed locally. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'batonlocal', secretAccessKey: 'batonlocal' } as const;

/** SDK clients pointed at the local stack's endpoints. S3 uses path-style URLs, as fauxqs requires. */
export function localClients(endpoints: Endpoints, region: string) {
  const base = { region, credentials: LOCAL_CREDENTIALS };
  return {
    dynamodb: new DynamoDBClient({ ...base, endpoint: endpoints.dynamodb }),
    sqs: new SQSClient({ ...base, endpoint: endpoints.sqs }),
    s3: new S3Client({ ...base, endpoint: endpoints.s3, forcePathStyle: true }),
  };
}

/**
 * The environment an AWS SDK client needs to reach the local stack with no code change: the
 * standard per-service endpoint variables, a region and dummy credentials.
 */
export function localAwsEnv(endpoints: Endpoints, region: string): Record<string, string> {
  return {
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    AWS_ENDPOINT_URL_S3: endpoints.s3,
  };
}
