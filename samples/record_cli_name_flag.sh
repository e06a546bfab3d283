#!/usr/bin/env bash
# Records samples/cli-name-flag.jsonl with the plantrail CLI: adding a --name flag to a CLI, start to finish.
#
# Usage: samples/record_cli_name_flag.sh OUT.jsonl | --update   (--update replaces samples/cli-name-flag.jsonl)
# Set PLANTRAIL to run another build, e.g. PLANTRAIL="python -m plantrail".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# OUT, or --update to replace the sample itself: nothing is written into samples/ unless asked.
case "${1:-}" in
  --update) log=$here/cli-name-flag.jsonl ;;
  "" | -*) echo "usage: $0 OUT.jsonl | --update   (--update replaces samples/cli-name-flag.jsonl)" >&2; exit 2 ;;
  *) log=$1 ;;
esac
read -r -a plantrail <<< "${PLANTRAIL:-plantrail}"
pt() { "${plantrail[@]}" "$@"; }
rm -f "$log"
pt create "$log" --plan "$here/cli-name-flag.draft.json" --run cli-name-flag
pt start "$log" inspect
pt complete "$log" inspect \
  -e "read_file src/index.ts: parseArgs() handles --help and --version only" \
  -e "read_file tests/cli.test.ts: 4 tests, spawn-based" \
  -e "read_file package.json: test script is 'vitest run'"
pt start "$log" implement
pt complete "$log" implement \
  -e "apply_patch src/index.ts: +--name <value>, error 'missing value for --name' (exit 2)" \
  -e "apply_patch tests/cli.test.ts: +2 tests (name success, missing value)"
pt start "$log" validate
pt complete "$log" validate -e "run_command pnpm vitest run tests/cli.test.ts: 6 passed (6) in 1.21s"
pt criterion "$log" name-success --passed -e "node dist/index.js --name Lin -> 'Hello, Lin' (exit 0)"
pt criterion "$log" name-missing --passed -e "node dist/index.js --name -> 'missing value for --name' (exit 2)"
pt criterion "$log" cli-regression --passed -e "the 4 existing tests in tests/cli.test.ts pass"
pt finish "$log" --outcome complete --reason "every step completed with evidence and every criterion passed"
