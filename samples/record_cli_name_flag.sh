#!/usr/bin/env bash
# Records samples/cli-name-flag.jsonl with the plantrail CLI: adding a --name flag to a CLI, start to finish.
set -euo pipefail
cd "$(dirname "$0")"
log=cli-name-flag.jsonl
rm -f "$log"
plantrail create "$log" --plan cli-name-flag.draft.json --run cli-name-flag
plantrail start "$log" inspect
plantrail complete "$log" inspect \
  -e "read_file src/index.ts: parseArgs() handles --help and --version only" \
  -e "read_file tests/cli.test.ts: 4 tests, spawn-based" \
  -e "read_file package.json: test script is 'vitest run'"
plantrail start "$log" implement
plantrail complete "$log" implement \
  -e "apply_patch src/index.ts: +--name <value>, error 'missing value for --name' (exit 2)" \
  -e "apply_patch tests/cli.test.ts: +2 tests (name success, missing value)"
plantrail start "$log" validate
plantrail complete "$log" validate -e "run_command pnpm vitest run tests/cli.test.ts: 6 passed (6) in 1.21s"
plantrail criterion "$log" name-success --passed -e "node dist/index.js --name Lin -> 'Hello, Lin' (exit 0)"
plantrail criterion "$log" name-missing --passed -e "node dist/index.js --name -> 'missing value for --name' (exit 2)"
plantrail criterion "$log" cli-regression --passed -e "the 4 existing tests in tests/cli.test.ts pass"
plantrail finish "$log" --outcome complete --reason "every step completed with evidence and every criterion passed"
