#!/usr/bin/env bash
# Records samples/session-expiry.jsonl with the plantrail CLI: the session-expiry task under the v2
# contract (docs/contract.md): typed checks with an expected failure, priorities, evidence records with usage,
# a refused completion (CHECK_NOT_MET), and a run whose turn budget runs out (the stop policy's
# budget_exhausted; plantrail resume exits 15).
#
# Usage: samples/record_session_expiry.sh OUT.jsonl | --update   (--update replaces samples/session-expiry.jsonl)
# Set PLANTRAIL to run another build, e.g. PLANTRAIL="python -m plantrail".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# OUT, or --update to replace the sample itself: nothing is written into samples/ unless asked.
case "${1:-}" in
  --update) log=$here/session-expiry.jsonl ;;
  "" | -*) echo "usage: $0 OUT.jsonl | --update   (--update replaces samples/session-expiry.jsonl)" >&2; exit 2 ;;
  *) log=$1 ;;
esac
read -r -a plantrail <<< "${PLANTRAIL:-plantrail}"
pt() { "${plantrail[@]}" "$@"; }
rm -f "$log"
pt create "$log" --plan "$here/session-expiry.draft.json" --run session-expiry
pt next "$log"
pt start "$log" reproduce
pt complete "$log" reproduce -e "test/session.test.js: the expired-session case gets 200, expected 401" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 1, "changed_paths": ["test/session.test.js"],
 "observations": [{"check": "new-test-fails", "exit_code": 1}], "tools": ["Edit", "Bash"],
 "usage": {"turns": 3, "tool_calls": 6, "tokens": 9100, "cost_usd": 0.31}, "duration_s": 41.2,
 "meta": {"tool_call_id": "toolu_01", "worker": "w1"}}
JSON
pt start "$log" implement
# The fix's first try: the new test still fails. Completing is refused (CHECK_NOT_MET, the log unchanged) ...
if pt complete "$log" implement -e "checked expiry" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 1, "observations": [{"check": "new-test-passes", "exit_code": 1}],
 "usage": {"turns": 3, "tool_calls": 5, "tokens": 8000, "cost_usd": 0.28}}
JSON
then exit 1; fi
# ... so the runtime reports the attempt as failed, with the same record.
pt fail "$log" implement --error "session.test.js still gets 200: expiry compared in seconds, token in ms" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 1, "changed_paths": ["src/session.js"],
 "observations": [{"check": "new-test-passes", "exit_code": 1}],
 "usage": {"turns": 3, "tool_calls": 5, "tokens": 8000, "cost_usd": 0.28}}
JSON
pt start "$log" implement
pt complete "$log" implement -e "expiry compared in ms; the new test gets 401" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 0, "changed_paths": ["src/session.js"],
 "observations": [{"check": "new-test-passes", "exit_code": 0}],
 "usage": {"turns": 2, "tool_calls": 4, "tokens": 6500, "cost_usd": 0.22}}
JSON
pt status "$log"
pt start "$log" verify
pt fail "$log" verify --error "lint: 1 error in src/session.js" --report - <<'JSON'
{"command": "npm run lint", "exit_code": 2, "observations": [{"check": "suite", "exit_code": 0}, {"check": "lint", "exit_code": 2}],
 "usage": {"turns": 4, "tool_calls": 3, "tokens": 7000, "cost_usd": 0.25}}
JSON
# 12 turns spent: the stop policy says budget_exhausted (a spent budget is not completion evidence).
pt next "$log" || true
pt resume "$log" || test $? -eq 15
