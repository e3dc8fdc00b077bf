export * from './ed25519.js';
export * from './ed25519-point.js';
export * from './headers.js';
export * from './signature.js';
export * from './wire.js';
export * from './jobs.js';
export * from './params.js';
