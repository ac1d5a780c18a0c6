import { describe, expect, it } from 'vitest';
import { demoBatch } from '../../../lib/demo/demo-batch.ts';
import { ProgressTracker } from '../../../lib/demo/progress-tracker.ts';
import { ProgressView } from '../../../lib/demo/progress-view.ts';
import type { SessionStore } from '../../../lib/ports/session-store.ts';

describe('ProgressView', () => {
  it('prints one plain line per changed ticket and no escape codes when the output is not a terminal', () => {
    // Arrange
    const written: string[] = [];
    const view = new ProgressView({ tty: false, write: (text) => written.push(text) }, 'header');
    const tracker = new ProgressTracker({} as SessionStore);
    const t = tracker.add(demoBatch(1, 'demo-t')[0]!, 0);
    t.state = 'running';

    // Act
    view.render(tracker.tickets, [t], { elapsedMs: 6_000, results: 0, workerKills: 0, chaos: false });

    // Assert
    expect(written.join('')).toMatch(/T01 {2}order-investigator +leg +0 +step +0 +running/);
    expect(written.join('')).not.toContain('\x1b[');
  });

  it('redraws the table in place on a terminal', () => {
    const written: string[] = [];
    const view = new ProgressView({ tty: true, write: (text) => written.push(text) }, 'header');
    const tracker = new ProgressTracker({} as SessionStore);
    tracker.add(demoBatch(1, 'demo-t')[0]!, 0);
    const running = { elapsedMs: 1_000, results: 0, workerKills: 0, chaos: false };
    view.render(tracker.tickets, [], running);
    view.render(tracker.tickets, [], running);
    // header + one ticket + summary = 3 lines moved over on the second draw
    expect(written).toContain('\x1b[3F\x1b[J');
  });
});
