import type { ReactNode } from 'react';

/**
 * Controls a role may see but not use: there, disabled (the API would refuse them). Wrap only what
 * changes something: a control that only shows more (**Show rollout**) stays outside, usable by all.
 */
export function ReadOnly({ when, children }: { when: boolean; children: ReactNode }) {
  return (
    <fieldset className="read-only" disabled={when}>
      {children}
    </fieldset>
  );
}
