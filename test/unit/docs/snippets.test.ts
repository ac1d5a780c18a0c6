import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** One ```ts block of a Markdown file. */
interface Snippet {
  /** The Markdown file, relative to the repository. */
  readonly doc: string;
  /** 1-based line of the block's first code line in the Markdown file. */
  readonly line: number;
  readonly code: string;
  /** `file=PATH` in the fence: where the snippet says it lives, so other snippets can import it. */
  readonly file?: string | undefined;
  /** `nocheck` in the fence: deliberately partial, not compiled. */
  readonly nocheck: boolean;
}

/** The ```ts (or ```typescript) blocks of a Markdown text, with where each starts. */
function tsSnippets(doc: string, markdown: string): Snippet[] {
  const snippets: Snippet[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(ts|typescript)(?:\s+(.*))?$/.exec(lines[i] as string);
    if (fence === null) continue;
    const words = (fence[2] ?? '').split(/\s+/).filter(Boolean);
    const end = lines.findIndex((line, at) => at > i && line.startsWith('```'));
    if (end === -1) throw new Error(`${doc}:${i + 1}: a \`\`\`ts block that is never closed`);
    snippets.push({
      doc,
      line: i + 2,
      code: lines.slice(i + 1, end).join('\n'),
      file: words.find((word) => word.startsWith('file='))?.slice('file='.length),
      nocheck: words.includes('nocheck'),
    });
    i = end;
  }
  return snippets;
}

/** README.md and docs/*.md: the documents a user reads code from. */
function documents(): Array<{ doc: string; markdown: string }> {
  const docs = [
    'README.md',
    ...readdirSync(join(REPO_ROOT, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`),
  ];
  return docs.map((doc) => ({ doc, markdown: readFileSync(join(REPO_ROOT, doc), 'utf8') }));
}

/**
 * `@baton-run/baton` and its subpaths mapped to this checkout's sources, as the package's
 * `baton-source` export condition maps them: a snippet compiles against the code it documents.
 */
function sourcePaths(): Record<string, string[]> {
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, string | Record<string, string>>;
  };
  return Object.fromEntries(
    Object.entries(manifest.exports).flatMap(([subpath, target]) =>
      typeof target === 'object' && target['baton-source']
        ? [[manifest.name + subpath.slice(1), [join(REPO_ROOT, target['baton-source'])]]]
        : [],
    ),
  );
}

/**
 * A user's project in a temporary folder: each snippet a module (at its `file=` path, else one of
 * its own), this checkout's node_modules, and the compiler options `baton init` writes. Returns
 * each written file's snippet.
 */
function userProject(root: string, snippets: readonly Snippet[]): Map<string, Snippet> {
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
  // The README's testing section runs this repository's own examples: they are at hand, as in a checkout.
  symlinkSync(join(REPO_ROOT, 'examples'), join(root, 'examples'), 'dir');
  writeFileSync(join(root, 'package.json'), JSON.stringify({ type: 'module' }));
  const files = new Map<string, Snippet>();
  for (const snippet of snippets) {
    const name = snippet.file ?? `snippets/${snippet.doc.replace(/[/.]/g, '-')}-${snippet.line}.ts`;
    if (files.has(name)) throw new Error(`${snippet.doc}:${snippet.line}: a second snippet at file=${name}`);
    const path = join(root, name);
    mkdirSync(dirname(path), { recursive: true });
    // Every snippet is a module of its own, so two may declare the same names.
    writeFileSync(path, `${snippet.code}\nexport {};\n`);
    files.set(path, snippet);
  }
  return files;
}

const COMPILER_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2024,
  lib: ['lib.es2024.d.ts'],
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  types: ['node'],
  customConditions: ['baton-source'],
  strict: true,
  noEmit: true,
  allowImportingTsExtensions: true,
  verbatimModuleSyntax: true,
  skipLibCheck: true,
  resolveJsonModule: true,
};

/** Compiles the snippets as one project; returns each error in a snippet as `DOC:LINE: TSnnnn message`. */
function compile(snippets: readonly Snippet[]): string[] {
  const root = mkdtempSync(join(tmpdir(), 'baton-snippets-'));
  cleanup.push(root);
  const files = userProject(root, snippets);
  const program = ts.createProgram({
    rootNames: [...files.keys()],
    options: { ...COMPILER_OPTIONS, paths: sourcePaths(), typeRoots: [join(root, 'node_modules/@types')] },
  });
  // Only the snippets are checked: Baton's own sources are the typecheck's business, and checking
  // them (and the CDK's) again would take minutes.
  const diagnostics = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()].map(
    (diagnostic) => `options: TS${diagnostic.code} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`,
  );
  return diagnostics.concat(
    [...files.keys()].flatMap((path) => {
      const source = program.getSourceFile(path);
      if (source === undefined) return [`${path}: not in the program`];
      return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((diagnostic) =>
        located(diagnostic, files.get(path) as Snippet),
      );
    }),
  );
}

/** A diagnostic as `DOC:LINE: TSnnnn message`, at the document's line. */
function located(diagnostic: ts.Diagnostic, snippet: Snippet): string {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n  ');
  if (diagnostic.file === undefined || diagnostic.start === undefined)
    return `${snippet.doc}:${snippet.line}: TS${diagnostic.code} ${message}`;
  const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  return `${snippet.doc}:${snippet.line + line}: TS${diagnostic.code} ${message}`;
}

const cleanup: string[] = [];
afterAll(() => {
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
});

describe('tsSnippets', () => {
  it('finds ts blocks with their first line, file and nocheck marks, and nothing else', () => {
    const markdown = [
      '# Title', //
      '```sh',
      'npm test',
      '```',
      '```ts file=src/agents.ts',
      'export const a = 1;',
      '```',
      '```ts nocheck',
      'partial(',
      '```',
    ].join('\n');

    expect(tsSnippets('X.md', markdown)).toEqual([
      { doc: 'X.md', line: 6, code: 'export const a = 1;', file: 'src/agents.ts', nocheck: false },
      { doc: 'X.md', line: 9, code: 'partial(', file: undefined, nocheck: true },
    ]);
  });

  it('refuses a block that is never closed, naming its line', () => {
    expect(() => tsSnippets('X.md', 'text\n```ts\nconst a = 1;\n')).toThrow('X.md:2');
  });
});

describe('the documents’ TypeScript snippets', () => {
  const all = documents().flatMap(({ doc, markdown }) => tsSnippets(doc, markdown));
  const checked = all.filter((snippet) => !snippet.nocheck);

  it('are mostly whole: few are marked nocheck', () => {
    expect(checked.length).toBeGreaterThan(5);
    const partial = all.filter((snippet) => snippet.nocheck).map((s) => `${s.doc}:${s.line}`);
    expect(partial.length, `nocheck snippets: ${partial.join(', ')}`).toBeLessThanOrEqual(3);
  });

  // One compilation for the documents and for a snippet that is broken on purpose, which must come
  // back naming its document and line. Tens of seconds on a quiet machine, minutes on a loaded one:
  // parsing the CDK's types is most of it.
  it('type-check against this checkout as a user’s project compiles them, an error naming its line', {
    timeout: 600_000,
  }, () => {
    const broken: Snippet = {
      doc: 'BROKEN.md',
      line: 40,
      code: "import { defineTool } from '@baton-run/baton';\n\ndefineTool({ name: 1 });",
      nocheck: false,
    };

    const errors = compile([...checked, broken]);

    expect(errors.filter((error) => !error.startsWith('BROKEN.md:'))).toEqual([]);
    expect(errors.find((error) => error.startsWith('BROKEN.md:'))).toMatch(/^BROKEN\.md:42: TS\d+ /);
  });
});
