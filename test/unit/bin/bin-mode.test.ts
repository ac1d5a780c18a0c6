import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

describe("the package's bin", () => {
  it('is an executable file in git, so `npx baton` in a checkout runs it instead of "Permission denied"', () => {
    const { bin } = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { bin: Record<string, string> };
    const modes = Object.values(bin).map((path) => {
      const line = execFileSync('git', ['ls-files', '--stage', '--', path], { cwd: ROOT, encoding: 'utf8' });
      return { path, mode: line.split(' ')[0] };
    });

    expect(modes).toEqual(Object.values(bin).map((path) => ({ path, mode: '100755' })));
  });
});
