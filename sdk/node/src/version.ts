// Sent as context.library on every message; a test holds it equal to package.json's version.
export const LIBRARY = { name: '@tr/audiences-node', version: '0.1.0' } as const;
