import { describe, expect, it } from 'vitest';
import { LegResources } from '../../../lib/runtime/leg-resources.ts';

describe('a leg resource scope', () => {
  it('opens a resource once on first use, shares it, and closes it once', async () => {
    const events: string[] = [];
    const scope = new LegResources(() => {});
    const open = async () => {
      events.push('open');
      return { id: events.length };
    };
    const close = async (value: { id: number }) => {
      events.push(`close ${value.id}`);
    };
    const [a, b] = await Promise.all([scope.use('mcp:x', open, close), scope.use('mcp:x', open, close)]);
    expect(a).toBe(b);
    await scope.closeAll();
    await scope.closeAll();
    expect(events).toEqual(['open', 'close 1']);
    // After a close the next use opens afresh (a new leg's worth).
    await scope.use('mcp:x', open, close);
    expect(events.at(-1)).toBe('open');
  });

  it('forgets a failed open so the next call retries, and reports a failed close without throwing', async () => {
    const problems: string[] = [];
    const scope = new LegResources((key, error) => problems.push(`${key}: ${error}`));
    let attempts = 0;
    const open = async () => {
      if (++attempts === 1) throw new Error('spawn failed');
      return 'connection';
    };
    await expect(scope.use('mcp:y', open, async () => {})).rejects.toThrow('spawn failed');
    await expect(
      scope.use('mcp:y', open, async () => {
        throw new Error('already gone');
      }),
    ).resolves.toBe('connection');
    await scope.closeAll();
    expect(problems).toEqual(['mcp:y: Error: already gone']);
  });
});
