import { useEffect, useRef, type FormEvent, type KeyboardEvent, type ReactNode, type RefObject } from 'react';

/**
 * A confirmation (or a small form: a new name, a role) that takes the place of the button that
 * asked for it. The button is gone from the page, and the keyboard with it: this takes the
 * keyboard in (the group itself, where a screen reader reads its name, or a form's first field),
 * and Escape is its way out, as its cancel button. `useReturnFocus` gives the keyboard back to the
 * button once it closes.
 */
export function Confirm({
  label,
  onCancel,
  onSubmit,
  noValidate,
  role,
  className = 'confirm',
  children,
}: {
  /** What it confirms (`Delete nightly`): the group's name; a form's, if given. */
  label?: string;
  onCancel: () => void;
  /** A form (its fields, a submit button) rather than a group of buttons. */
  onSubmit?: (event: FormEvent) => void;
  noValidate?: boolean;
  /** A form's role: `group` for one inside a table, not a landmark of its own. */
  role?: 'group';
  className?: string;
  children: ReactNode;
}) {
  const ref = useRef<HTMLFormElement & HTMLDivElement>(null);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    (element.querySelector<HTMLElement>('input, select, textarea') ?? element).focus();
    // Once, when it opens: the page's refreshes re-render it without moving the keyboard.
  }, []);
  const escape = (event: KeyboardEvent) => {
    if (event.key !== 'Escape') return;
    event.preventDefault();
    onCancel();
  };
  return onSubmit ? (
    <form
      ref={ref}
      onSubmit={onSubmit}
      onKeyDown={escape}
      noValidate={noValidate}
      role={role}
      aria-label={label}
      className={className}
    >
      {children}
    </form>
  ) : (
    <div ref={ref} role="group" aria-label={label} tabIndex={-1} onKeyDown={escape} className={className}>
      {children}
    </div>
  );
}

/**
 * The ref of a button that opens a `Confirm`: when `open` turns false (cancelled, or done and the
 * button is back), the keyboard, which was in what closed and went with it, returns to the button.
 * Focus the user moved elsewhere meanwhile stays there.
 */
export function useReturnFocus(open: boolean): RefObject<HTMLButtonElement | null> {
  const opener = useRef<HTMLButtonElement>(null);
  const wasOpen = useRef(open);
  useEffect(() => {
    const lost = document.activeElement === null || document.activeElement === document.body;
    if (wasOpen.current && !open && lost) opener.current?.focus();
    wasOpen.current = open;
  }, [open]);
  return opener;
}
