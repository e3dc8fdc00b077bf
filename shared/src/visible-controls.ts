/**
 * Text from elsewhere (a job's log line, an error message, a name an agent reported) printed on
 * a terminal must be read, never obeyed: an escape sequence in it could set the clipboard (OSC 52),
 * rewrite lines already printed (CSI), change the window's title or hide what follows. Every
 * printer of such text, the `drover` command line and the readable logs (`drover-agent logs`, the
 * coordinator's on a terminal), shows control characters with these two functions.
 */

/** C0 controls but the tab and the line break, DEL, and the C1 controls (U+0080 to U+009F). */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
/** The same, the line break included: for text that must stay on one line. */
// eslint-disable-next-line no-control-regex
const CONTROLS_AND_LINE_BREAKS = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;

const hex = (char: string) => `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`;

export interface ShowControlsOptions {
  /** Keep `\n` as a line break (the default); false shows it as `\x0a` (a field of a one-line record). */
  lineBreaks?: boolean;
}

/**
 * `text` with every control character written as `\xHH` (ESC as `\x1b`, CR as `\x0d`, DEL as
 * `\x7f`, CSI as `\x9b`), so that a terminal shows it instead of obeying it. Tabs are kept, and
 * line breaks unless `lineBreaks` is false.
 */
export function showControls(text: string, options: ShowControlsOptions = {}): string {
  return text.replace(options.lineBreaks === false ? CONTROLS_AND_LINE_BREAKS : CONTROLS, hex);
}

/**
 * JSON text safe to print on a terminal and still the same JSON: DEL and the C1 controls, which
 * JSON.stringify leaves raw in strings, written as `\u00HH` escapes (so is a raw C0 control but
 * the tab and the line break, which JSON.stringify never writes).
 */
export function showControlsInJson(json: string): string {
  return json.replace(CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
