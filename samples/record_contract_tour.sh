#!/usr/bin/env bash
# Record samples/contract-tour.jsonl with the plantrail CLI itself (docs/contract-tour.md walks through it):
# the session-expiry task under the executable plan contract.
#
#   reproduce  a check with an expected failure: the new test must exit 1, and does (a pass).
#   implement  its worker w1 heartbeats, then is killed: the lease expires, resume proposes abandon, the
#              attempt is abandoned (not charged: the step allows one attempt), and w1's late result lands
#              on the orphan path (STALE_ATTEMPT). Worker w2 does the fix.
#   verify     lint fails and the run's turn budget is spent: the stop policy says budget_exhausted, and the
#              run finishes budget_exhausted, listing what is unmet (a spent budget is not completion evidence).
#
# Usage: samples/record_contract_tour.sh [OUT]   (default: samples/contract-tour.jsonl, replaced)
# Set PLANTRAIL to run another build, e.g. PLANTRAIL="python -m plantrail".
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/contract-tour.jsonl}
read -r -a plantrail <<< "${PLANTRAIL:-plantrail}"
pt() { "${plantrail[@]}" "$@"; }
rm -f "$out"

pt create "$out" --plan "$here/contract-tour.draft.json" --run contract-tour
# [scopes: to come with the contract helper's work] the draft's task scope and per-step writes go here.

pt start "$out" reproduce
# An expected failure is a pass: the reproduction must exit 1.
pt complete "$out" reproduce -e "test/session.test.js: the expired-session case gets 200, expected 401" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 1, "changed_paths": ["test/session.test.js"],
 "observations": [{"check": "new-test-fails", "exit_code": 1}],
 "usage": {"turns": 2, "tool_calls": 4, "tokens": 6100, "cost_usd": 0.21}, "meta": {"worker": "w1"}}
JSON

pt start "$out" implement
# Worker w1 renews a short lease, then is killed (kill -9): no result, no more heartbeats.
pt heartbeat "$out" implement --lease 1
sleep 2
# The lease expired: resume exits 10 (a step in doubt) and proposes abandon.
pt resume "$out" || test $? -eq 10
pt abandon "$out" implement --reason "worker w1 was killed; its lease expired"
# w1's result still arrives: it is recorded on the orphan path (STALE_ATTEMPT), never applied.
pt complete "$out" implement --attempt 1 -e "w1: expiry compared in ms" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 0, "observations": [{"check": "new-test-passes", "exit_code": 0}],
 "usage": {"turns": 2, "tool_calls": 3, "tokens": 5000, "cost_usd": 0.17}, "meta": {"worker": "w1"}}
JSON
# The abandoned attempt was not charged: the step's one attempt is still there for worker w2.
pt start "$out" implement
pt heartbeat "$out" implement
pt complete "$out" implement -e "expiry compared in ms; the new test gets 401" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 0, "changed_paths": ["src/session.js"],
 "observations": [{"check": "new-test-passes", "exit_code": 0}],
 "usage": {"turns": 3, "tool_calls": 5, "tokens": 7400, "cost_usd": 0.26}, "meta": {"worker": "w2"}}
JSON
# [scope violation: to come with the contract helper's work] a result changing package.json, outside
# implement's writes, is recorded blocked (scope_violation) and pauses the run here.
# [approval: to come with the contract helper's work] approval.requested / plantrail approve widen the scope.

pt start "$out" verify
pt fail "$out" verify --error "lint: 1 error in src/session.js" --report - <<'JSON'
{"command": "npm run lint", "exit_code": 2, "observations": [{"check": "suite", "exit_code": 0}, {"check": "lint", "exit_code": 2}],
 "usage": {"turns": 3, "tool_calls": 3, "tokens": 7000, "cost_usd": 0.25}, "meta": {"worker": "w2"}}
JSON
# 10 turns spent: the stop policy says budget_exhausted; nothing more can start.
pt next "$out"
pt finish "$out" --outcome budget_exhausted --reason "the 10-turn budget is spent; lint still fails"
pt resume "$out" || test $? -eq 15
