import { describe, expect, it } from 'vitest';
import { supportDesk } from '../../../examples/support-desk/agent.ts';
import { createTestBaton } from '../../../lib/testing/index.ts';

// The README's "Testing your agents" example, as written there.
describe('baton/testing on the example support desk', () => {
  it('approves a mocked refund, then fires a two-hour reminder with advance', async () => {
    const baton = createTestBaton({ agents: [supportDesk()] });
    const refunds = baton.mockTool('support-desk', 'issueRefund', ({ orderId }: { orderId: string }) => ({
      refundId: `R-${orderId}`,
    }));

    const chat = await baton.start('support-desk', { text: 'refund O-1' });
    const waiting = await chat.status();
    await chat.approve();
    const refunded = await chat.output();
    const later = await chat.send({ text: 'remind me in 7200 s' });
    const beforeTimer = await later.outcome();
    await baton.advance('2h');

    expect(waiting.pendingApprovals).toMatchObject([{ tool: 'issueRefund', input: { orderId: 'O-1' } }]);
    expect(refunded).toBe('refund R-O-1 issued for O-1');
    expect(refunds.calls).toHaveLength(1);
    expect(beforeTimer).toBeUndefined();
    expect(await later.output()).toBe('reminder');
  });
});
