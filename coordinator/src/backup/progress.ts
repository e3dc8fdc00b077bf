/** Where `backup` and `restore` say how far they are: stderr, one line redrawn on a terminal. */
export interface Progress {
  /** The start of a part of the work: always shown. */
  step(text: string): void;
  /** How far the current part is: redrawn on a terminal, a line every 10 s otherwise. */
  update(text: string): void;
  /** Ends the line being redrawn (before a result or an error is printed). */
  end(): void;
}

export const silentProgress: Progress = { step: () => undefined, update: () => undefined, end: () => undefined };

/**
 * A progress line on `out`: on a terminal one line, redrawn at most 10 times a second; in a log
 * (systemd's journal, a pipe) each step's line and then at most a line every 10 seconds.
 */
export function progressOn(
  out: { isTTY?: boolean; write(text: string): unknown },
  now: () => number = Date.now,
): Progress {
  const tty = out.isTTY === true;
  const interval = tty ? 100 : 10_000;
  let last = 0;
  let open = false;
  const show = (text: string) => {
    last = now();
    if (tty) {
      out.write(`\r\x1b[K${text}`);
      open = true;
    } else {
      out.write(`${text}\n`);
    }
  };
  return {
    step: show,
    update(text) {
      if (now() - last >= interval) show(text);
    },
    end() {
      if (open) out.write('\n');
      open = false;
    },
  };
}
