#!/usr/bin/env node
/**
 * The `baton` command. Each command is a function `(args, io) => exit code` in a module of
 * lib/cli, imported only when that command runs: `baton status` loads a client, not the local
 * stack, the runtime or the CDK. Adding one is a line in COMMANDS.
 */
import { existsSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { missingLocalStackPackages } from './local-stack-packages.ts';
import type { CommandIo } from './session-commands.ts';

/** A signal repeated within this window is one Ctrl-C delivered twice (terminal and parent), not an insistence. */
const REPEATED_SIGNAL_WINDOW_MS = 1_000;

export type Command = (args: string[], io: CommandIo) => Promise<number>;

/** A command imported on first use: `load` picks it out of its module. */
const lazy =
  (load: () => Promise<Command>): Command =>
  async (args, io) =>
    (await load())(args, io);

const sessionCommand = (name: keyof typeof import('./session-commands.ts')): Command =>
  lazy(async () => (await import('./session-commands.ts'))[name] as Command);

/** Where a checkout-only command's module is, beside this one (absent from the published package). */
const checkoutModule = (name: string): URL => new URL(`./${name}${extname(import.meta.url)}`, import.meta.url);

/**
 * A command that runs only from a checkout of the repository (demo, bench, chaos): loaded on use,
 * by a computed specifier so the published package's compiled graph leaves it out.
 */
const fromCheckout =
  (name: string): Command =>
  async (args, io) => {
    const url = checkoutModule(name).href;
    const loaded = (await import(url).catch(() => {
      throw new Error(`'baton ${name}' runs from a checkout of the Baton repository, not from the installed package`);
    })) as Record<string, Command>;
    return (loaded[name] as Command)(args, io);
  };

/**
 * `baton dev`, loaded on use: the local stack imports its optional peer packages, which a project
 * that only deploys does not install; without them the command says which to add.
 */
const dev: Command = async (args, io) => {
  try {
    const loaded = await import('./dev.ts');
    return await loaded.dev(args, io);
  } catch (error) {
    throw missingLocalStackPackages(error) ?? error;
  }
};

interface CommandEntry {
  readonly run: Command;
  /** Runs only from a checkout: left out of `--help` where its module is absent (the installed package). */
  readonly checkoutOnly?: boolean;
  /** One line for `baton --help`. */
  readonly summary: string;
  /** Shown by `baton COMMAND --help`; a function when the text lives in a module not worth loading for the rest. */
  readonly usage: string | (() => Promise<string>);
}

const COMMANDS: Record<string, CommandEntry> = {
  dev: {
    run: dev,
    summary: 'start the embedded local AWS stack, the functions, the web console and the HTTP API',
    usage:
      'baton dev [--agents FILE] [--callers FILE] [--tenant-limits FILE|JSON] [--submit TICKET.json] [--workers N] [--timeout-s S] [--visibility-s S] [--data DIR] [--port P] [--prefix P] [--log-format pretty|json] [--watch]',
  },
  init: {
    run: lazy(async () => (await import('./init.ts')).init),
    summary: 'write a new project: agents, handlers, a CDK app, a local test and a README',
    usage: 'baton init DIR',
  },
  demo: {
    run: fromCheckout('demo'),
    checkoutOnly: true,
    summary: 'run the order-investigation demo on the local stack, with live progress',
    usage:
      'baton demo [--tickets N] [--workers W] [--chaos] [--chaos-every-s S] [--timeout-s S] [--deadline-s S] [--prefix P] [--verbose]',
  },
  bench: {
    run: fromCheckout('bench'),
    checkoutOnly: true,
    summary: 'measure journal cost, the full-rewrite and durable-function baselines, throughput, recovery, bundle',
    usage: 'baton bench [--json] [--only SECTION,...]',
  },
  submit: {
    run: sessionCommand('submit'),
    summary: 'drop a ticket on the tickets queue (--wait: print the answer; exit 0 completed, 1 failed, 2 cancelled)',
    usage:
      'baton submit --agent NAME [--id TICKET_ID] [--tenant T] (--text TEXT | --input JSON | --file F | --file -) [--wait [--follow]]',
  },
  status: {
    run: sessionCommand('status'),
    summary: "show a session's state and outcome",
    usage: 'baton status SESSION',
  },
  list: {
    run: sessionCommand('list'),
    summary: "list a tenant's sessions, newest first, one page at a time",
    usage: 'baton list [--tenant T] [--agent A] [--status S] [--from ISO] [--to ISO] [--limit N] [--cursor C]',
  },
  events: {
    run: sessionCommand('events'),
    summary: "print a session's journal as JSON lines (following: with streaming model text)",
    usage: 'baton events SESSION [--turn TURN_ID] [--after CURSOR] [--follow]',
  },
  send: {
    run: sessionCommand('send'),
    summary: 'send a further turn (or a message into the running turn) to a conversation (--wait: as submit)',
    usage:
      'baton send SESSION (--text TEXT | --input JSON | --file F) [--id TURN_ID] [--mode queue|inject|steer] [--if-last-turn TURN_ID] [--wait [--follow]]',
  },
  fork: {
    run: sessionCommand('fork'),
    summary:
      'fork a session at a journal cursor: its history up to there, a new input or the rest of the turn, and no once-only call repeated unasked',
    usage:
      'baton fork SESSION --at CURSOR [--text TEXT | --input JSON | --file F] [--id NEW] [--effects ask|reuse|deny|rerun] [--version V]',
  },
  rerun: {
    run: sessionCommand('rerun'),
    summary: 'run a turn again in a fork that starts where it started, with its input',
    usage: 'baton rerun SESSION --turn TURN_ID [--id NEW] [--effects ask|reuse|deny|rerun] [--version V]',
  },
  approve: {
    run: sessionCommand('approve'),
    summary: 'approve (or deny) a call waiting for a human',
    usage: 'baton approve SESSION CALL_ID [--model-seq N] [--digest SHA256] [--deny] [--reason TEXT]',
  },
  resolve: {
    run: sessionCommand('resolve'),
    summary: 'record whether a parked once-only call happened, and resume the turn',
    usage: 'baton resolve SESSION CALL_ID [--model-seq N] [--digest SHA256] (--done [--output JSON] | --not-done)',
  },
  cancel: {
    run: sessionCommand('cancel'),
    summary: 'ask a running session to stop (--turn: stop that turn alone; the conversation goes on)',
    usage: 'baton cancel SESSION [--turn TURN_ID]',
  },
  tasks: {
    run: sessionCommand('tasks'),
    summary: "list a session's background tasks with their status, result or error",
    usage: 'baton tasks SESSION',
  },
  release: {
    run: sessionCommand('release'),
    summary: 'release a session: cancel its running tasks, wait for them, refuse new work',
    usage: 'baton release SESSION [--no-cancel] [--timeout-s 30]',
  },
  versions: {
    run: lazy(async () => (await import('./versions.ts')).versions),
    summary: 'list each agent version and the live sessions on it (counts, oldest)',
    usage: 'baton versions [AGENT]',
  },
  'check-upgrade': {
    run: lazy(async () => (await import('./versions.ts')).checkUpgrade),
    summary: 'fold live or exported sessions with new agents, no model or tool called; exit 1 if any would break',
    usage: 'baton check-upgrade --agents NEW_MODULE [--sessions N | --from DIR] [--export DIR]',
  },
  chaos: {
    run: fromCheckout('chaos'),
    checkoutOnly: true,
    summary: 'kill, pause and fault a local stack, then check the invariants',
    usage: async () => (await import('../chaos/chaos-options.ts')).CHAOS_USAGE,
  },
  schedules: {
    run: lazy(async () => (await import('./schedules.ts')).schedules),
    summary: "list the agents module's schedules with their next fire times",
    usage: 'baton schedules [--agents FILE] [--count N]',
  },
  schemas: {
    run: lazy(async () => (await import('./schemas.ts')).schemas),
    summary: 'print or write the JSON Schemas of the queue messages',
    usage: 'baton schemas [--write DIR]',
  },
};

const GLOBAL_USAGE = `usage: baton [--json] [--api URL | --stack NAME [--region R] | --state-dir DIR] COMMAND [ARGS]

Global options:
  --json            machine-readable output
  --api URL         use the HTTP API (a function URL, signed with SigV4, or baton dev's) instead of the tables
  --stack NAME      talk to a deployed stack (CloudFormation outputs) instead of the local one
  --region R        AWS region of --stack
  --state-dir DIR   where the local stack keeps local.json and the ledger (default .baton)
  -h, --help        this text, or a command's usage with a command

Commands:`;

/** Below the usage of a command that takes an input: what its input flags send. */
const INPUT_HELP =
  'Input: --text TEXT sends {"text": TEXT}; --input JSON sends the JSON as given; --file F reads it from a file (- for stdin).';
/** Below every command's usage: the global options it also takes. */
const GLOBALS_HELP =
  'Global options, anywhere on the line: --json, --api URL, --stack NAME [--region R], --state-dir DIR (baton --help).';

interface GlobalOptions {
  json: boolean;
  help: boolean;
  api?: string;
  stack?: string;
  region?: string;
  stateDir?: string;
}

/** Takes the global flags out of argv wherever they stand; the rest is the command and its arguments. */
export function splitGlobalOptions(argv: readonly string[]): { globals: GlobalOptions; rest: string[] } {
  const globals: GlobalOptions = { json: false, help: false };
  const valued = { '--api': 'api', '--stack': 'stack', '--region': 'region', '--state-dir': 'stateDir' } as const;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    if (token === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    if (token === '--json') globals.json = true;
    else if (token === '--help' || token === '-h') globals.help = true;
    else {
      const [flag, inline] = token.split(/=(.*)/s, 2) as [string, string | undefined];
      const key = valued[flag as keyof typeof valued] as (typeof valued)[keyof typeof valued] | undefined;
      if (key === undefined) rest.push(token);
      else {
        const value = inline ?? argv[++i];
        if (value === undefined) throw new Error(`${flag} needs a value`);
        globals[key] = value;
      }
    }
  }
  return { globals, rest };
}

/** Runs the CLI; resolves to the process exit code. */
const printLine = (line: string) => console.log(line);

export async function main(argv: readonly string[], out = printLine): Promise<number> {
  const { globals, rest } = splitGlobalOptions(argv);
  const [name, ...args] = rest;
  if (name === undefined || name === 'help') {
    out(globalUsage());
    return globals.help || name === 'help' ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (command === undefined) {
    console.error(`baton: unknown command '${name}'\n`);
    console.error(globalUsage());
    return 2;
  }
  if (globals.help) {
    const usage = typeof command.usage === 'string' ? command.usage : await command.usage();
    out(`usage: ${usage}\n`);
    if (usage.includes('--text TEXT')) out(INPUT_HELP);
    out(GLOBALS_HELP);
    return 0;
  }
  // First Ctrl-C asks the command to stop cleanly; another one, later, exits at once.
  const controller = new AbortController();
  let firstSignalAtMs = 0;
  const onSignal = () => {
    if (!controller.signal.aborted) {
      firstSignalAtMs = Date.now();
      controller.abort();
    } else if (Date.now() - firstSignalAtMs > REPEATED_SIGNAL_WINDOW_MS) process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await command.run(args, {
      json: globals.json,
      out,
      connect: {
        ...(globals.api === undefined ? {} : { api: globals.api }),
        ...(globals.stack === undefined ? {} : { stack: globals.stack }),
        ...(globals.region === undefined ? {} : { region: globals.region }),
        ...(globals.stateDir === undefined ? {} : { stateDir: globals.stateDir }),
      },
      signal: controller.signal,
      // Streamed text goes out as it comes when printing to the terminal; a caller's `out` gets whole lines.
      ...(out === printLine ? { write: (text: string) => void process.stdout.write(text) } : {}),
      note: (line: string) => console.error(line),
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function globalUsage(): string {
  const shown = Object.entries(COMMANDS).filter(
    ([name, entry]) => !entry.checkoutOnly || existsSync(fileURLToPath(checkoutModule(name))),
  );
  const width = Math.max(...shown.map(([name]) => name.length));
  const lines = shown.map(([name, entry]) => `  ${name.padEnd(width)}  ${entry.summary}`);
  return [GLOBAL_USAGE, ...lines].join('\n');
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(`baton: ${error instanceof Error ? error.message : String(error)}`);
      process.exitCode = 1;
    },
  );
}
