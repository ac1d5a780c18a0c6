import { S3Client } from '@aws-sdk/client-s3';
import type { AwsClientConfig } from '../aws-clients.ts';
import { s3ClientConfig } from './s3-sdk.ts';

/**
 * An S3 client, built now (clients, tools and tests). Not in aws-clients.ts: its static import of
 * the S3 SDK would load it in every function (see s3-sdk.ts, which the functions use instead).
 */
export function createS3Client(config: AwsClientConfig): S3Client {
  return new S3Client(s3ClientConfig(config));
}
