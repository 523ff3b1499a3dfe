#!/usr/bin/env node
// Runs one TypeScript file of this project through tsx (used by `npm run bench`): `node bin/run-ts.js FILE [args…]`.
import { register } from 'tsx/esm/api';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

register();
const file = process.argv[2];
if (!file) {
  console.error('usage: node bin/run-ts.js FILE.ts [args…]');
  process.exit(2);
}
process.argv.splice(2, 1);
await import(pathToFileURL(resolve(file)).href);
