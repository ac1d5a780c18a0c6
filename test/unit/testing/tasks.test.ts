import { describe, expect, it } from 'vitest';
import { dispatcher } from '../../../examples/dispatcher/agent.ts';
import { supportDesk } from '../../../examples/support-desk/agent.ts';
import { createTestBaton } from '../../../lib/testing/index.ts';

describe('baton/testing with background tasks', () => {
  it("runs a delegating agent's tasks as child sessions and reports them when all have ended", async () => {
    const baton = createTestBaton({ agents: [dispatcher({ delegates: ['support-desk'] }), supportDesk()] });

    const run = await baton.start('dispatcher', {
      tasks: [
        { agent: 'support-desk', input: { text: 'hello' }, description: 'greet' },
        { agent: 'support-desk', input: { text: 'bye' }, description: 'part' },
      ],
    });

    expect(await run.output()).toMatchObject({
      greet: { status: 'completed', output: 'turn 1: hello' },
      part: { status: 'completed', output: 'turn 1: bye' },
    });
  });
});
