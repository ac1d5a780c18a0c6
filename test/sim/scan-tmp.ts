import { runSeed } from './run.ts';

let shown = 0;
for (let seed = 1; seed <= 600 && shown < 2; seed++) {
  const r = await runSeed(seed, { traceAll: true });
  const all = r.traceAll ?? [];
  const i = all.findIndex((l) => /POUNCE \[release s\d at turn-end/.test(l));
  if (i < 0) continue;
  shown++;
  console.log(
    seed,
    r.plan,
    r.violations.map((v) => v.invariant),
  );
  console.log(all.slice(i - 3, i + 22).join('\n'));
}
