import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

const WRITE_COMMANDS = new Set(['PutItemCommand', 'UpdateItemCommand', 'PutCommand', 'UpdateCommand']);

/**
 * A fault below the SDK's retry layer: the armed write reaches DynamoDB and commits, then its
 * response is replaced by a 500, so the SDK retries the same request — which now fails its
 * condition. This is how a real timeout after commit looks to the caller.
 */
export function addRetryAfterCommitFault(client: DynamoDBClient): { armNextWrite(): void; readonly fired: number } {
  let armed = 0;
  let fired = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const output = await next(args);
      if (armed > 0 && WRITE_COMMANDS.has(context.commandName ?? '')) {
        armed--;
        fired++;
        throw Object.assign(new Error('injected: the write committed, then the response was lost'), {
          name: 'InternalServerError',
          $fault: 'server',
          $metadata: { httpStatusCode: 500 },
        });
      }
      return output;
    },
    { step: 'deserialize', name: 'batonRetryAfterCommitFault', override: true },
  );
  return {
    armNextWrite: () => {
      armed++;
    },
    get fired() {
      return fired;
    },
  };
}
