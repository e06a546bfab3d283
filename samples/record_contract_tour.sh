#!/usr/bin/env bash
# Record samples/contract-tour.jsonl with the plantrail CLI itself (docs/contract-tour.md walks through it):
# the session-expiry task under the executable plan contract.
#
#   the draft  a task scope (what the whole task may write) and per step writes and allowed_tools; verify is
#              read-only (writes: []); changelog requires approval before it starts.
#   reproduce  a check with an expected failure: the new test must exit 1, and does (a pass).
#   implement  its worker w1 heartbeats, then is killed: the lease expires, resume proposes abandon, the
#              attempt is abandoned (not charged: the step allows one attempt), and w1's late result lands
#              on the orphan path (STALE_ATTEMPT). Worker w2 does the fix.
#   changelog  the approval gate: its start is refused (APPROVAL_REQUIRED) until an approval is granted. Its
#              worker then also bumps the version in package.json, outside the step's writes: the result is
#              recorded as the blocked attempt (scope_violation) and the run is paused, so a start is refused
#              (PAUSED_SCOPE_VIOLATION). An approval that widens changelog's writes to package.json ends the
#              pause, and the retried attempt completes.
#   verify     lint fails and the run's turn budget is spent: the stop policy says budget_exhausted, and the
#              run finishes budget_exhausted, listing what is unmet (a spent budget is not completion evidence).
#
# Usage: samples/record_contract_tour.sh OUT.jsonl | --update   (--update replaces samples/contract-tour.jsonl)
# Set PLANTRAIL to run another build, e.g. PLANTRAIL="python -m plantrail".
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# OUT, or --update to replace the sample itself: nothing is written into samples/ unless asked.
case "${1:-}" in
  --update) out=$here/contract-tour.jsonl ;;
  "" | -*) echo "usage: $0 OUT.jsonl | --update   (--update replaces samples/contract-tour.jsonl)" >&2; exit 2 ;;
  *) out=$1 ;;
esac
read -r -a plantrail <<< "${PLANTRAIL:-plantrail}"
pt() { "${plantrail[@]}" "$@"; }
# expect CODE CMD...: run CMD, which must exit with CODE (a refusal is 1; resume's verdicts have their own).
expect() {
  local want=$1 got=0
  shift
  "$@" || got=$?
  if [ "$got" -ne "$want" ]; then echo "expected exit $want, got $got: $*" >&2; exit 1; fi
}
rm -f "$out"

# The draft declares the task scope and each step's writes and allowed_tools. Validation refuses a step write
# outside the task scope before a byte is written: the same draft with verify writing package.json is
# SCOPE_OUTSIDE_TASK, and no log is created.
sed 's/"writes": \[\],/"writes": ["package.json"],/' "$here/contract-tour.draft.json" |
  expect 1 pt create "$out" --plan - --run contract-tour
test ! -e "$out"
pt create "$out" --plan "$here/contract-tour.draft.json" --run contract-tour

pt start "$out" reproduce
# An expected failure is a pass: the reproduction must exit 1.
pt complete "$out" reproduce -e "test/session.test.js: the expired-session case gets 200, expected 401" --report - <<'JSON'
{"command": "npm test -- session.test.js", "exit_code": 1, "changed_paths": ["test/session.test.js"],
 "observations": [{"check": "new-test-fails", "exit_code": 1}], "tools": ["Edit", "Bash"],
 "usage": {"turns": 2, "tool_calls": 4, "tokens": 6100, "cost_usd": 0.21}, "meta": {"worker": "w1"}}
JSON

pt start "$out" implement
# Worker w1 renews a short lease, then is killed (kill -9): no result, no more heartbeats.
pt heartbeat "$out" implement --lease 1
sleep 2
# The lease expired: resume exits 10 (a step in doubt) and proposes abandon.
expect 10 pt resume "$out"
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
 "observations": [{"check": "new-test-passes", "exit_code": 0}], "tools": ["Edit", "Bash"],
 "usage": {"turns": 3, "tool_calls": 5, "tokens": 7400, "cost_usd": 0.26}, "meta": {"worker": "w2"}}
JSON
# changelog requires approval: it waits (waiting_approval) and its start is refused until one is granted.
pt next "$out"
expect 1 pt start "$out" changelog
pt request-approval "$out" changelog-entry --steps changelog --question "May the fix be noted in CHANGELOG.md?"
pt approve "$out" changelog-entry --by ana --why "the fix is user-visible"
pt start "$out" changelog
# Its worker also bumped the version in package.json, outside changelog's writes: the result is recorded as the
# blocked attempt (scope_violation), and the run is paused.
pt complete "$out" changelog -e "CHANGELOG.md: expired sessions now get 401; version bumped" --report - <<'JSON'
{"command": "git diff --stat", "exit_code": 0, "changed_paths": ["CHANGELOG.md", "package.json"], "tools": ["Edit"],
 "usage": {"turns": 1, "tool_calls": 2, "tokens": 1800, "cost_usd": 0.06}, "meta": {"worker": "w2"}}
JSON
# A plain start does not end the pause: refused (PAUSED_SCOPE_VIOLATION), the log unchanged.
expect 1 pt start "$out" verify
expect 12 pt resume "$out"
# Only an approval that widens the scope (or a replan) ends it: changelog may now write package.json too.
pt request-approval "$out" version-bump --steps changelog --writes package.json \
  --question "May changelog bump the patch version in package.json?"
pt approve "$out" version-bump --by ana --why "a fix release bumps the patch version"
pt start "$out" changelog
pt complete "$out" changelog -e "CHANGELOG.md: expired sessions now get 401; version 1.4.1" --report - <<'JSON'
{"command": "git diff --stat", "exit_code": 0, "changed_paths": ["CHANGELOG.md", "package.json"], "tools": ["Edit"],
 "usage": {"turns": 1, "tool_calls": 2, "tokens": 1500, "cost_usd": 0.05}, "meta": {"worker": "w2"}}
JSON

pt start "$out" verify
pt fail "$out" verify --error "lint: 1 error in src/session.js" --report - <<'JSON'
{"command": "npm run lint", "exit_code": 2, "observations": [{"check": "suite", "exit_code": 0}, {"check": "lint", "exit_code": 2}],
 "tools": ["Bash"],
 "usage": {"turns": 3, "tool_calls": 3, "tokens": 7000, "cost_usd": 0.25}, "meta": {"worker": "w2"}}
JSON
# 12 turns spent: the stop policy says budget_exhausted; nothing more can start.
pt next "$out"
pt finish "$out" --outcome budget_exhausted --reason "the 12-turn budget is spent; lint still fails"
expect 15 pt resume "$out"
