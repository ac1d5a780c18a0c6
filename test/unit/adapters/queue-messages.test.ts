import { describe, expect, it } from 'vitest';
import { sqsMessageBody } from '../../../lib/adapters/queue-messages.ts';

/** SQS's body alphabet: #x9 | #xA | #xD | #x20–#xD7FF | #xE000–#xFFFD (fauxqs stops there; AWS adds the astral planes). */
const withinFauxqsAlphabet = (text: string) => /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD]*$/u.test(text);

describe('a message body on the wire', () => {
  it('escapes emoji, astral characters, U+FFFE and U+FFFF, and reads back as the same value', () => {
    const value = { text: 'a🎉b 👩‍👩‍👧 𝄞 \uffff\ufffe ok', 'k🔑': ['\u0000', '\u2028', 'é中'] };

    const body = sqsMessageBody(value);

    expect(withinFauxqsAlphabet(body)).toBe(true);
    expect(body).toContain('\\ud83c\\udf89');
    expect(JSON.parse(body)).toEqual(value);
  });

  it('leaves a body without such characters as JSON.stringify writes it', () => {
    const value = { text: 'héllo 中文 — “quoted”', n: [1, 2.5, null] };
    expect(sqsMessageBody(value)).toBe(JSON.stringify(value));
  });
});
