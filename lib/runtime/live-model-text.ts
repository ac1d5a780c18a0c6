import type { SessionKey } from '../core/ids.ts';
import type { LiveEvents } from '../ports/live-events.ts';
import type { ModelStreamSink } from '../ports/model-client.ts';

/**
 * The sink a streaming model writes partial text to: each delta is added to the text so far and
 * published for live followers as the entry at `seq` to be. Without a live channel there is no
 * sink, and a streaming model just returns its whole response.
 */
export function liveModelText(
  live: LiveEvents | undefined,
  session: SessionKey,
  seq: number,
): ModelStreamSink | undefined {
  if (!live) return undefined;
  let text = '';
  return {
    text: (delta) => {
      text += delta;
      live.publish(session, { kind: 'model-text', seq, text });
    },
  };
}
