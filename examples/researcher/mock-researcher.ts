import type {
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4Message,
  LanguageModelV4StreamPart,
} from '@ai-sdk/provider';
import { MockLanguageModelV4, simulateReadableStream } from 'ai/test';

/** Between two streamed words of the answer: enough for a follower to watch it being written. */
const WORD_DELAY_MS = 15;

type Call = { toolName: string; input: Record<string, unknown> };
type Result = { toolName: string; output: Record<string, unknown> };

/**
 * The researcher's default model: the AI SDK's own mock language model, answering from the
 * transcript alone (so a resumed turn sees the same answers). For any question it searches,
 * reads every page found, looks three terms up, files two notes and searches once more — ten
 * tool calls over five steps — then answers with what the tools returned.
 */
export function mockResearcherModel(): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    provider: 'mock',
    modelId: 'researcher',
    doGenerate: async (options) => reply(options),
    // The same reply as a stream: tool calls whole, the answer word by word.
    doStream: async (options) => ({
      stream: simulateReadableStream({ chunks: streamParts(reply(options)), chunkDelayInMs: WORD_DELAY_MS }),
    }),
  });
}

function streamParts(result: LanguageModelV4GenerateResult): LanguageModelV4StreamPart[] {
  const parts: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }];
  for (const [i, part] of result.content.entries()) {
    if (part.type === 'text') {
      const id = `text-${i}`;
      parts.push({ type: 'text-start', id });
      for (const word of part.text.split(/(?<=\s)(?=\S)/)) parts.push({ type: 'text-delta', id, delta: word });
      parts.push({ type: 'text-end', id });
    } else if (part.type === 'tool-call') parts.push(part);
  }
  parts.push({ type: 'finish', finishReason: result.finishReason, usage: result.usage });
  return parts;
}

function reply(options: LanguageModelV4CallOptions): LanguageModelV4GenerateResult {
  const question = questionOf(options.prompt);
  const results = toolResults(options.prompt);
  const of = (name: string) => results.filter((r) => r.toolName === name).map((r) => r.output);
  const searches = of('search');
  let calls: Call[] = [];
  if (searches.length === 0) calls = [{ toolName: 'search', input: { query: question } }];
  else if (of('fetch_page').length === 0)
    calls = pagesOf(searches[0]).map((page) => ({ toolName: 'fetch_page', input: { url: page.url } }));
  else if (of('define').length === 0)
    calls = termsOf(question).map((term) => ({ toolName: 'define', input: { term } }));
  else if (of('save_note').length === 0)
    calls = [
      {
        toolName: 'save_note',
        input: {
          text: of('fetch_page')
            .map((p) => String(p.summary))
            .join(' '),
        },
      },
      {
        toolName: 'save_note',
        input: {
          text: of('define')
            .map((d) => String(d.definition))
            .join(' '),
        },
      },
    ];
  else if (searches.length === 1) calls = [{ toolName: 'search', input: { query: `${question} (follow-up)` } }];

  const content: LanguageModelV4Content[] =
    calls.length > 0
      ? calls.map((call, i) => ({
          type: 'tool-call',
          toolCallId: `call-${results.length + i + 1}`,
          toolName: call.toolName,
          input: JSON.stringify(call.input),
        }))
      : [{ type: 'text', text: answer(question, of) }];
  const tokens = (value: unknown) => Math.ceil(JSON.stringify(value).length / 4);
  return {
    content,
    finishReason: { unified: calls.length > 0 ? 'tool-calls' : 'stop', raw: undefined },
    usage: {
      inputTokens: { total: tokens(options.prompt), noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: tokens(content), text: undefined, reasoning: undefined },
    },
    warnings: [],
  };
}

function answer(question: string, of: (name: string) => Record<string, unknown>[]): string {
  const pages = of('fetch_page').map((p) => `${p.url} (${p.words} words)`);
  const definitions = of('define').map((d) => String(d.definition));
  const notes = of('save_note').map((n) => String(n.id));
  const followUp = pagesOf(of('search')[1]).map((p) => p.title);
  return [
    `Question: ${question}`,
    `Read ${pages.length} pages: ${pages.join('; ')}.`,
    `Definitions: ${definitions.join(' ')}`,
    `Filed notes: ${notes.join(', ')}.`,
    `To read next: ${followUp.join('; ')}.`,
  ].join('\n');
}

function questionOf(prompt: readonly LanguageModelV4Message[]): string {
  const first = prompt.find((m) => m.role === 'user');
  const text = first?.role === 'user' ? first.content.find((c) => c.type === 'text') : undefined;
  if (text?.type !== 'text') return 'an unstated question';
  try {
    const parsed = JSON.parse(text.text) as { question?: unknown };
    return typeof parsed.question === 'string' ? parsed.question : text.text;
  } catch {
    return text.text;
  }
}

function toolResults(prompt: readonly LanguageModelV4Message[]): Result[] {
  const results: Result[] = [];
  for (const message of prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content)
      if (part.type === 'tool-result')
        results.push({
          toolName: part.toolName,
          output: part.output.type === 'json' ? (part.output.value as Record<string, unknown>) : {},
        });
  }
  return results;
}

const pagesOf = (search: Record<string, unknown> | undefined) =>
  (Array.isArray(search?.pages) ? search.pages : []) as { url: string; title: string }[];

/** Three terms from the question: its longest words, padded with generic ones. */
function termsOf(question: string): string[] {
  const words = [...new Set(question.toLowerCase().match(/[a-z][a-z-]{3,}/g) ?? [])].sort(
    (a, b) => b.length - a.length,
  );
  return [...words, 'evidence', 'method', 'source'].filter((w, i, all) => all.indexOf(w) === i).slice(0, 3);
}
