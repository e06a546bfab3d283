#!/usr/bin/env bash
# Records samples/session-expiry.jsonl with the plantrail CLI: the session-expiry task under the v2
# contract (docs/contract.md): typed checks with an expected failure, priorities, evidence records with usage,
# a refused completion (CHECK_NOT_MET), and a run whose turn budget runs out (the stop policy's
# budget_exhausted; plantrail resume exits 15).
set -euo pipefail
cd "$(dirname "$0")"
log=session-expiry.jsonl
rm -f "$log"
plantrail create "$log" --plan session-expiry.draft.json --run session-expiry
plantrail next "$log"
plantrail start "$log" reproduce
plantrail complete "$log" reproduce -e "test/session.test.js: the expired-session case gets 200, expected 401" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 1, "changed_paths": ["test/session.test.js"],
 "observations": [{"check": "new-test-fails", "exit_code": 1}], "tools": ["Edit", "Bash"],
 "usage": {"turns": 3, "tool_calls": 6, "tokens": 9100, "cost_usd": 0.31}, "duration_s": 41.2,
 "meta": {"tool_call_id": "toolu_01", "worker": "w1"}}
JSON
plantrail start "$log" implement
# The fix's first try: the new test still fails. Completing is refused (CHECK_NOT_MET, the log unchanged) ...
if plantrail complete "$log" implement -e "checked expiry" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 1, "observations": [{"check": "new-test-passes", "exit_code": 1}],
 "usage": {"turns": 3, "tool_calls": 5, "tokens": 8000, "cost_usd": 0.28}}
JSON
then exit 1; fi
# ... so the runtime reports the attempt as failed, with the same record.
plantrail fail "$log" implement --error "session.test.js still gets 200: expiry compared in seconds, token in ms" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 1, "changed_paths": ["src/session.js"],
 "observations": [{"check": "new-test-passes", "exit_code": 1}],
 "usage": {"turns": 3, "tool_calls": 5, "tokens": 8000, "cost_usd": 0.28}}
JSON
plantrail start "$log" implement
plantrail complete "$log" implement -e "expiry compared in ms; the new test gets 401" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 0, "changed_paths": ["src/session.js"],
 "observations": [{"check": "new-test-passes", "exit_code": 0}],
 "usage": {"turns": 2, "tool_calls": 4, "tokens": 6500, "cost_usd": 0.22}}
JSON
plantrail status "$log"
plantrail start "$log" verify
plantrail fail "$log" verify --error "lint: 1 error in src/session.js" --report - <<'JSON'
{"command": "npm run lint", "exit_code": 2, "observations": [{"check": "suite", "exit_code": 0}, {"check": "lint", "exit_code": 2}],
 "usage": {"turns": 4, "tool_calls": 3, "tokens": 7000, "cost_usd": 0.25}}
JSON
# 12 turns spent: the stop policy says budget_exhausted (a spent budget is not completion evidence).
plantrail next "$log" || true
plantrail resume "$log" || test $? -eq 15
