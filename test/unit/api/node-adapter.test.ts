import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { ApiHandler } from '../../../lib/api/api-handler.ts';
import { serveWithHandler } from '../../../lib/api/node-adapter.ts';

describe("baton dev's HTTP adapter", () => {
  it("refuses a body over a function URL's 6 MB with 413, saying whose limit it is and where a larger input goes", async () => {
    // Arrange: a server whose handler records whether it was called.
    let called = false;
    const handler: ApiHandler = async () => {
      called = true;
      return '{}';
    };
    const server = createServer((request, response) => void serveWithHandler(handler, request, response, '/sessions'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;

    try {
      // Act
      const response = await fetch(`http://127.0.0.1:${port}/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ agent: 'a', input: 'x'.repeat(6 * 1024 * 1024) }),
      });

      // Assert
      expect(response.status).toBe(413);
      const { error } = (await response.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe('invalid_request');
      expect(error.message).toMatch(/over 6291456 bytes, the HTTP API's limit .*tickets queue/);
      expect(called).toBe(false);
    } finally {
      server.close();
    }
  });
});
