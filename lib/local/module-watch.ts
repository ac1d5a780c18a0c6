import { existsSync, type FSWatcher, readFileSync, statSync, watch } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';

/** Edits arrive as bursts (an editor's write, rename and chmod): one reload per burst. */
const SETTLE_MS = 250;

/** How a relative specifier may name a file: as written, by a `.js` name for its `.ts` source, or without an extension. */
const CANDIDATE_SUFFIXES = ['', '.ts', '.mts', '.tsx', '.js', '.mjs', '/index.ts', '/index.js'];

/** Relative module specifiers of static imports, re-exports, side-effect and dynamic imports. */
const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g;

export interface ModuleWatch {
  /** The files watched now: the module and what it imports under its project. */
  files(): string[];
  close(): void;
}

/**
 * Calls `onChange` when `entry` or a module it imports by a relative path (transitively) under
 * its project (the folder of the nearest package.json) changes, once per burst of edits; the
 * graph is read again after each change, so a newly imported file is watched from then on.
 * Packages (node_modules) are not followed: a dependency changes by an install, not an edit.
 * @example const watching = watchModuleGraph('src/agents.ts', () => supervisor.reload());
 */
export function watchModuleGraph(entry: string, onChange: (changed: string) => void): ModuleWatch {
  const root = projectRoot(resolve(entry));
  let graph = new Set<string>();
  let watchers: FSWatcher[] = [];
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const rewatch = () => {
    for (const watcher of watchers) watcher.close();
    graph = moduleGraph(resolve(entry), root);
    // Folders, not files: an editor that saves by writing a new file and renaming it over the old
    // one would leave a watcher of the old file's inode deaf.
    const folders = new Set([...graph].map((file) => dirname(file)));
    watchers = [...folders].map((folder) =>
      watch(folder, (_event, name) => {
        const changed = name === null ? undefined : join(folder, name.toString());
        if (changed === undefined || !graph.has(changed)) return;
        clearTimeout(timer);
        timer = setTimeout(() => {
          if (closed) return;
          rewatch();
          onChange(changed);
        }, SETTLE_MS);
      }),
    );
  };
  rewatch();
  return {
    files: () => [...graph],
    close() {
      closed = true;
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
    },
  };
}

/** The folder of the nearest package.json above `file` (its own folder when there is none). */
function projectRoot(file: string): string {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return dirname(file);
  }
}

/** `entry` and the files it imports by relative paths, transitively, that lie under `root` and outside node_modules. */
export function moduleGraph(entry: string, root: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    let source: string;
    try {
      source = readFileSync(file, 'utf8');
    } catch {
      return; // deleted meanwhile: still watched, so its return is seen
    }
    for (const match of source.matchAll(RELATIVE_IMPORT)) {
      const imported = resolveRelative(dirname(file), match[1] as string);
      if (imported !== undefined && isUnder(imported, root) && !imported.split(sep).includes('node_modules'))
        visit(imported);
    }
  };
  visit(entry);
  return seen;
}

function resolveRelative(from: string, specifier: string): string | undefined {
  const path = resolve(from, specifier);
  const stems = path.endsWith('.js') ? [path, `${path.slice(0, -3)}.ts`] : [path];
  for (const stem of stems)
    for (const suffix of CANDIDATE_SUFFIXES) {
      const candidate = stem + suffix;
      if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
    }
  return undefined;
}

const isUnder = (file: string, root: string): boolean => file === root || file.startsWith(root + sep);
