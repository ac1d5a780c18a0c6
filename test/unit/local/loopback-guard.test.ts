import { describe, expect, it } from 'vitest';
import { CONSOLE_SECURITY_HEADERS, loopbackRefusal } from '../../../lib/local/loopback-guard.ts';

describe('baton dev answers this machine’s pages and tools only', () => {
  it('takes a loopback Host, with a loopback page’s Origin or none (the CLI, curl)', () => {
    expect(loopbackRefusal({ host: '127.0.0.1:7717' })).toBeUndefined();
    expect(loopbackRefusal({ host: 'localhost:7717', origin: 'http://localhost:7717' })).toBeUndefined();
    expect(loopbackRefusal({ host: '[::1]:7717', origin: 'http://127.0.0.1:7717' })).toBeUndefined();
  });

  it('refuses a rebound name, a missing Host, another site’s page and an opaque (null) origin', () => {
    expect(loopbackRefusal({ host: 'attacker.example:7717' })).toMatch(/not a loopback name/);
    expect(loopbackRefusal({ host: 'localhost.attacker.example' })).toMatch(/not a loopback name/);
    expect(loopbackRefusal({ host: '127.0.0.1.nip.io:7717' })).toMatch(/not a loopback name/);
    expect(loopbackRefusal({})).toMatch(/Host \(none\)/);
    expect(loopbackRefusal({ host: '127.0.0.1:7717', origin: 'https://attacker.example' })).toMatch(/Origin/);
    expect(loopbackRefusal({ host: '127.0.0.1:7717', origin: 'null' })).toMatch(/Origin null/);
    expect(loopbackRefusal({ host: '127.0.0.1:7717', origin: 'file://' })).toMatch(/Origin/);
  });

  it('gives the console a policy of its own scripts only, and no framing', () => {
    const policy = CONSOLE_SECURITY_HEADERS['content-security-policy'];

    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("connect-src 'self'");
    expect(CONSOLE_SECURITY_HEADERS['x-frame-options']).toBe('DENY');
  });
});
