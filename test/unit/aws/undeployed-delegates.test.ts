import { describe, expect, it, vi } from 'vitest';
import { agentRegistry, defineAgent, undeployedDelegates } from '../../../lib/agent/define-agent.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import { loadConfig } from '../../../lib/aws/function-config.ts';
import { createRuntimeDeps } from '../../../lib/aws/runtime-deps.ts';
import { ENV } from '../../../lib/core/resources.ts';
import { createPowertoolsTelemetry } from '../../../lib/telemetry/powertools-telemetry.ts';

const agent = (name: string, options: { delegates?: string[]; version?: number } = {}) =>
  defineAgent({
    name,
    instructions: 'Answer.',
    tools: [],
    model: scriptedModel({ script: () => ({ final: 'done' }) }),
    ...options,
  });

describe('delegates a deployment does not host', () => {
  it('are those the newest version of an agent names and the registry lacks; an older version may name one since removed', () => {
    const registry = agentRegistry([
      agent('dispatcher', { delegates: ['researcher', 'retired'], version: 1 }),
      agent('dispatcher', { delegates: ['researcher', 'ghost'], version: 2 }),
      agent('researcher'),
    ]);
    expect(undeployedDelegates(registry)).toEqual([{ agent: 'dispatcher', delegate: 'ghost' }]);
    expect(undeployedDelegates(agentRegistry([agent('researcher')]))).toEqual([]);
  });

  it('are warned of at cold start, naming the agent and the delegate', () => {
    const telemetry = createPowertoolsTelemetry({ serviceName: 'baton-test' });
    const warn = vi.spyOn(telemetry.logger, 'warn').mockImplementation(() => undefined);
    const config = loadConfig({
      [ENV.table]: 'sessions',
      [ENV.workQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/111122223333/work',
      [ENV.resultsQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/111122223333/results',
      AWS_REGION: 'eu-west-1',
    });
    createRuntimeDeps(config, { agents: agentRegistry([agent('dispatcher', { delegates: ['ghost'] })]), telemetry });
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('does not host'), {
      agent: 'dispatcher',
      delegate: 'ghost',
    });
  });
});
