import type { SignatureV4 } from '@smithy/signature-v4';

type Bytes = string | ArrayBuffer | ArrayBufferView;
const toBuffer = (data: Bytes): string | Buffer =>
  typeof data === 'string'
    ? data
    : ArrayBuffer.isView(data)
      ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
      : Buffer.from(data);

/**
 * SHA-256 (and HMAC-SHA-256 with a secret) for the signer, from node:crypto: taken when signing,
 * not imported, so the CLI's commands on the local stack, which import this module, skip it.
 */
class Sha256 {
  readonly #hash;
  constructor(secret?: Bytes) {
    const { createHash, createHmac } = process.getBuiltinModule('node:crypto');
    this.#hash = secret === undefined ? createHash('sha256') : createHmac('sha256', toBuffer(secret));
  }
  update(data: Bytes): void {
    this.#hash.update(toBuffer(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }
}

/** The region of a Lambda function URL (`https://ID.lambda-url.REGION.on.aws/`), or undefined for any other address. */
export function functionUrlRegion(url: string): string | undefined {
  return /^[a-z0-9]+\.lambda-url\.([a-z0-9-]+)\.on\.aws$/.exec(new URL(url).hostname)?.[1];
}

/**
 * A fetch that signs each request with SigV4 for service `lambda` (a function URL with IAM
 * auth), with the credentials of the default provider chain (environment, profile, role).
 */
export function sigv4Fetch(region: string): typeof fetch {
  // The signer and the credential chain load with the first request: a CLI that imports the HTTP
  // client and then talks to the local stack never loads them.
  let signer: Promise<SignatureV4> | undefined;
  const loadSigner = async () => {
    const [{ defaultProvider }, signature] = await Promise.all([
      import('@aws-sdk/credential-provider-node'),
      import('@smithy/signature-v4'),
    ]);
    return new signature.SignatureV4({ service: 'lambda', region, credentials: defaultProvider(), sha256: Sha256 });
  };
  return async (input, init = {}) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const headers: Record<string, string> = { host: url.host };
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    signer ??= loadSigner();
    const signed = await (await signer).sign({
      method: init.method ?? 'GET',
      protocol: url.protocol,
      hostname: url.hostname,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      ...(typeof init.body === 'string' ? { body: init.body } : {}),
    });
    return fetch(url, { ...init, headers: signed.headers });
  };
}
