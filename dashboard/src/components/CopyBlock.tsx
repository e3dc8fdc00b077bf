import { useState } from 'react';

/** Text to copy (a command, a token): shown in full, with a button that copies it. */
export function CopyBlock({ label, text }: { label: string; text: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      setState('failed');
    }
  };
  return (
    <figure className="copy-block">
      <figcaption>{label}</figcaption>
      <pre tabIndex={0} aria-label={label}>
        {text}
      </pre>
      <button type="button" onClick={() => void copy()}>
        Copy
      </button>
      <span role="status" className="hint">
        {state === 'copied' ? 'Copied.' : state === 'failed' ? 'The browser refused; select the text and copy it.' : ''}
      </span>
    </figure>
  );
}
