import type { S3Client } from '@aws-sdk/client-s3';
import type { AwsClientConfig } from '../aws-clients.ts';

type S3Sdk = typeof import('@aws-sdk/client-s3');
let sdk: Promise<S3Sdk> | undefined;

/**
 * The S3 SDK, imported at first use rather than with the modules that name it: the functions
 * put a payload in S3 only when it is over ~350 KB, and the S3 client is the largest SDK client
 * the runtime has, so loading it at every cold start costs time for nothing. A dynamic import of
 * the package itself, so that it stays lazy in a bundle that leaves the SDK external too.
 */
export function loadS3Sdk(): Promise<S3Sdk> {
  sdk ??= import('@aws-sdk/client-s3');
  return sdk;
}

/** The S3 client's configuration: path-style URLs when an endpoint is set, as emulators have no per-bucket DNS. */
export function s3ClientConfig(config: AwsClientConfig) {
  const endpoint = config.endpoints?.s3;
  return {
    region: config.region,
    ...(endpoint === undefined ? {} : { endpoint, forcePathStyle: true }),
    ...(config.maxAttempts === undefined ? {} : { maxAttempts: config.maxAttempts }),
    ...(config.credentials === undefined ? {} : { credentials: config.credentials }),
  };
}

/**
 * An S3 client, built once the SDK has loaded: hand it to S3BlobStore as `() => loadS3Client(aws)`.
 * @example new S3BlobStore({ client: () => loadS3Client({ region }), bucket })
 */
export async function loadS3Client(config: AwsClientConfig): Promise<S3Client> {
  const { S3Client } = await loadS3Sdk();
  return new S3Client(s3ClientConfig(config));
}
