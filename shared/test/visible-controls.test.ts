import { describe, expect, it } from 'vitest';
import { showControls, showControlsInJson } from '../src/visible-controls.js';

const OSC52 = '\u001b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\u0007'; // sets the clipboard
const CSI = '\u001b[2A\u001b[2K'; // two lines up, erase the line

describe('showControls', () => {
  it('writes escape sequences as text: OSC 52 cannot set the clipboard, CSI cannot rewrite lines', () => {
    expect(showControls(`build ok${OSC52}`)).toBe('build ok\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x07');
    expect(showControls(`fake${CSI}PASSED`)).toBe('fake\\x1b[2A\\x1b[2KPASSED');
  });

  it('shows every C0 control but tab and line break, DEL and every C1 control (8-bit CSI, OSC)', () => {
    const all = Array.from({ length: 0xa0 }, (_, i) => String.fromCharCode(i)).join('');
    const shown = showControls(all);
    expect(showControls(shown)).toBe(shown); // nothing left to show
    expect(shown).toContain('\t\n');
    expect(shown).toContain('\\x0d');
    expect(shown).toContain('\\x7f\\x80');
    expect(shown).toContain('\\x9b\\x9c\\x9d');
    expect(shown).toContain(' !"#$%&');
    expect(showControls('tab\there, é, 日本, 🙂')).toBe('tab\there, é, 日本, 🙂');
  });

  it('keeps line breaks, or shows them too for text that must stay on one line', () => {
    expect(showControls('one\ntwo\r\n')).toBe('one\ntwo\\x0d\n');
    expect(showControls('one\ntwo', { lineBreaks: false })).toBe('one\\x0atwo');
  });
});

describe('showControlsInJson', () => {
  it('leaves the JSON value as it was, with no control character left raw', () => {
    const value = { log: `a${OSC52}b${CSI}\u009b31m\u007f`, n: 1, nested: ['\u0085', 'tab\t'] };
    for (const json of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
      const safe = showControlsInJson(json);
      expect(showControls(safe)).toBe(safe);
      expect(JSON.parse(safe)).toEqual(value);
    }
    expect(showControlsInJson('"\u009b"')).toBe('"\\u009b"');
  });
});
