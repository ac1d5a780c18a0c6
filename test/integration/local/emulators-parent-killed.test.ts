import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';

const EMULATORS = fileURLToPath(new URL('../../../lib/local/emulators.ts', import.meta.url));
const TSX_LOADER = fileURLToPath(new URL('../../../node_modules/tsx/dist/loader.mjs', import.meta.url));

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: 2_000 });
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

async function waitFor(condition: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('DynamoDB Local started by the local stack', () => {
  it('exits when the process that started it is killed with SIGKILL (no exit handler runs)', async () => {
    // Arrange: a process that starts DynamoDB Local only (SQS and S3 are the suite's) and prints its endpoint.
    const { region, endpoints } = inject('baton');
    const script = [
      `import { startEmulators } from ${JSON.stringify(EMULATORS)};`,
      'const emulators = await startEmulators();',
      'console.log(emulators.endpoints.dynamodb);',
      'setInterval(() => {}, 60_000);',
    ].join('\n');
    const parent = spawn(process.execPath, ['--import', TSX_LOADER, '--input-type=module', '-e', script], {
      env: {
        ...process.env,
        AWS_REGION: region,
        AWS_ENDPOINT_URL_SQS: endpoints.sqs,
        AWS_ENDPOINT_URL_S3: endpoints.s3,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    parent.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const endpoint = await new Promise<string>((resolve, reject) => {
      let stdout = '';
      parent.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const line = stdout.split('\n').find((text) => text.startsWith('http://'));
        if (line !== undefined) resolve(line.trim());
      });
      parent.once('exit', (code) => reject(new Error(`the parent exited (${code}) before printing: ${stderr}`)));
    });
    const port = Number(new URL(endpoint).port);
    expect(await accepts(port), 'DynamoDB Local answers while its parent runs').toBe(true);

    // Act
    parent.kill('SIGKILL');

    // Assert: the JVM saw its stdin close and went; nothing is left on the port.
    await waitFor(
      async () => !(await accepts(port)),
      `DynamoDB Local on port ${port} stops after its parent died`,
      30_000,
    );
  });
});
