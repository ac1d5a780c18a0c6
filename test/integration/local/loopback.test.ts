import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { describe, expect, inject, it } from 'vitest';

/** This machine's first address on a real network (not loopback), if it has one. */
const networkAddress = Object.values(networkInterfaces())
  .flat()
  .find((address) => address !== undefined && !address.internal && address.family === 'IPv4')?.address;

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 5_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

describe('the local stack’s emulators', () => {
  const { endpoints } = inject('baton');
  const services = [
    ['DynamoDB Local', endpoints.dynamodb],
    ['fauxqs (SQS and S3)', endpoints.sqs],
  ] as const;

  it.skipIf(networkAddress === undefined).each(services)(
    '%s answers on the loopback interface and refuses connections on the network',
    async (_name, endpoint) => {
      const port = Number(new URL(endpoint).port);

      expect(await accepts('127.0.0.1', port), 'loopback').toBe(true);
      expect(await accepts(networkAddress as string, port), `network address ${networkAddress}`).toBe(false);
    },
  );
});
