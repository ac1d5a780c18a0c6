import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * What the AWS clients need to know. Endpoints are only for emulators and tests: without them the
 * SDK resolves its endpoint as usual (AWS_ENDPOINT_URL_* included).
 */
export interface AwsClientConfig {
  readonly region: string;
  readonly endpoints?: { readonly dynamodb?: string; readonly sqs?: string; readonly s3?: string } | undefined;
  /** Total attempts per request, the first included (the SDK's default is 3). */
  readonly maxAttempts?: number | undefined;
  /** Static credentials (emulators); the default provider chain when absent. */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string } | undefined;
}

const baseConfig = (config: AwsClientConfig, endpoint: string | undefined) => ({
  region: config.region,
  ...(endpoint === undefined ? {} : { endpoint }),
  ...(config.maxAttempts === undefined ? {} : { maxAttempts: config.maxAttempts }),
  ...(config.credentials === undefined ? {} : { credentials: config.credentials }),
});

/** A low-level DynamoDB client. Build it once at module scope: warm invocations reuse its sockets. */
export function createDynamoDbClient(config: AwsClientConfig): DynamoDBClient {
  return new DynamoDBClient(baseConfig(config, config.endpoints?.dynamodb));
}

/**
 * A DynamoDB document client over `client` (or a new one). Undefined values are dropped rather
 * than refused, so optional fields never need a branch at the call site.
 * @example const documents = createDocumentClient({ region: 'eu-west-1' });
 */
export function createDocumentClient(config: AwsClientConfig, client?: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client ?? createDynamoDbClient(config), {
    marshallOptions: { removeUndefinedValues: true },
  });
}

/** An SQS client. */
export function createSqsClient(config: AwsClientConfig): SQSClient {
  return new SQSClient(baseConfig(config, config.endpoints?.sqs));
}

// The S3 client is in s3/s3-client.ts (built now) and s3/s3-sdk.ts (built at first use): an
// import of the S3 SDK here would load it in every function that makes a DynamoDB client.
