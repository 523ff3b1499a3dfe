#!/usr/bin/env node
// Entry point of the `metrl` command. The project is written in TypeScript and run through tsx's loader, so a fresh
// clone works right after `npm ci` with no build step.
import { register } from 'tsx/esm/api';

register();
await import('../scripts/cli.ts');
