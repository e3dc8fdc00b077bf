import v8 from 'node:v8';

/**
 * WebAssembly compiled by V8's baseline compiler only (Liftoff), never also by its optimizing one
 * (TurboFan). undici parses HTTP with llhttp, a WebAssembly module, which V8 otherwise compiles a
 * second time, optimized, on a helper thread that the process waits for before it exits: about
 * 0.25 s of every `drover` call that reaches the coordinator (0.46 s instead of 0.21 s on the test
 * machine), for a command that parses a few answers and ends. The single executable starts with
 * the same option (cli/scripts/build-binary.mjs); this module sets it for `node cli/dist/main.js`,
 * imported before anything that loads undici.
 */
v8.setFlagsFromString('--liftoff-only');
