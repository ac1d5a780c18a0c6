import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, type UIMessage } from 'ai';
import { type FormEvent, StrictMode, useEffect, useMemo, useState } from 'react';
import { createRoot } from 'react-dom/client';

/** The agent this page talks to, and the API's chat address for it (useChat's transport needs nothing more). */
const AGENT = 'chat-web';
const API = `/api/agents/${AGENT}/chat`;

/** The chat's id lives in the address (`?chat=…`), so a reload comes back to the same conversation. */
function chatIdFromAddress(): string {
  const url = new URL(window.location.href);
  const named = url.searchParams.get('chat');
  if (named) return named;
  const id = crypto.randomUUID();
  url.searchParams.set('chat', id);
  window.history.replaceState(null, '', url);
  return id;
}

function newChat(): void {
  const url = new URL(window.location.href);
  url.searchParams.delete('chat');
  window.location.assign(url);
}

/** A message's text: its text parts in order (a reconnect may add a part where an answer paused). */
const textOf = (message: UIMessage): string =>
  message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');

/** Loads the conversation so far (a reload's starting point), then shows the chat. */
function App() {
  const [chatId] = useState(chatIdFromAddress);
  const [initial, setInitial] = useState<UIMessage[] | undefined>(undefined);
  useEffect(() => {
    fetch(`${API}/${encodeURIComponent(chatId)}`)
      .then(async (response) => setInitial(response.ok ? (await response.json()).messages : []))
      .catch(() => setInitial([]));
  }, [chatId]);
  if (initial === undefined) return <p>Loading…</p>;
  return <Chat chatId={chatId} initial={initial} />;
}

function Chat({ chatId, initial }: { chatId: string; initial: UIMessage[] }) {
  const transport = useMemo(() => new DefaultChatTransport({ api: API }), []);
  // resume: a turn still running (a reload mid-answer) is streamed again, from its start.
  const { messages, sendMessage, status, stop, error } = useChat({
    id: chatId,
    messages: initial,
    transport,
    resume: true,
  });
  const [text, setText] = useState('');
  const [stopped, setStopped] = useState(false);
  const busy = status === 'submitted' || status === 'streaming';

  const send = (event: FormEvent) => {
    event.preventDefault();
    if (text.trim() === '' || busy) return;
    setStopped(false);
    void sendMessage({ text });
    setText('');
  };
  // Stop ends the answer's turn on the server (aborting the fetch alone would leave it running);
  // the conversation goes on, and the next message is a new turn. The answer's metadata names
  // its turn, so the stop never reaches a later one.
  const stopTurn = async () => {
    const last = messages.at(-1);
    const turnId = last?.role === 'assistant' ? (last.metadata as { turnId?: string } | undefined)?.turnId : undefined;
    await stop();
    const turn = turnId === undefined ? '' : `?turn=${encodeURIComponent(turnId)}`;
    await fetch(`${API}/${encodeURIComponent(chatId)}/stop${turn}`, { method: 'POST' });
    setStopped(true);
  };

  return (
    <main>
      <h1>Baton chat</h1>
      <ol aria-label="Messages">
        {messages.map((message) => (
          <li key={message.id} data-role={message.role} aria-label={message.role === 'user' ? 'You' : 'Agent'}>
            <strong>{message.role === 'user' ? 'You' : 'Agent'}: </strong>
            <span>{textOf(message)}</span>
            {message.parts.map((part) =>
              part.type === 'dynamic-tool' ? (
                <code key={part.toolCallId}>
                  {' '}
                  [{part.toolName}({JSON.stringify(part.input)})
                  {part.state === 'output-available' ? ` → ${JSON.stringify(part.output)}` : ''}]
                </code>
              ) : null,
            )}
          </li>
        ))}
      </ol>
      {error && <p role="alert">Error: {error.message}</p>}
      {stopped && <p>Stopped: that answer ends here; send another message to go on.</p>}
      <form aria-label="Send a message" onSubmit={send}>
        <input aria-label="Message" value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit" disabled={busy}>
          Send
        </button>
        <button type="button" onClick={stopTurn} disabled={!busy}>
          Stop
        </button>
        <output aria-label="Status">{status}</output>
      </form>
      <button type="button" onClick={newChat}>
        New chat
      </button>
    </main>
  );
}

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
