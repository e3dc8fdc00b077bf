#!/usr/bin/env node
import './supported-node.js';
import { runCli } from './program.js';

process.exitCode = await runCli(process.argv.slice(2));
