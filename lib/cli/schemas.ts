import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { messageJsonSchemas } from '../core/json-schemas.ts';
import type { CommandIo } from './session-commands.ts';

/** `baton schemas [--write DIR]`: prints (or writes) the JSON Schemas of the queue messages. */
export async function schemas(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseArgs({ args, options: { write: { type: 'string' } } });
  const all = messageJsonSchemas();
  if (!values.write) {
    io.out(JSON.stringify(all, null, 2));
    return 0;
  }
  mkdirSync(values.write, { recursive: true });
  for (const [name, schema] of Object.entries(all)) {
    writeFileSync(join(values.write, `${name}.schema.json`), `${JSON.stringify(schema, null, 2)}\n`);
    io.out(`wrote ${join(values.write, `${name}.schema.json`)}`);
  }
  return 0;
}
