#!/usr/bin/env bash
# Record samples/login-fix-replans.jsonl with the plantrail CLI itself: a login fix that is replanned twice,
# with a late result from a first-version worker landing on the orphan path.
#
#   v1  reproduce, capture a fixture and write a regression test; diagnose and check-config run in parallel.
#   v2  failed_assumption (caused by diagnose's result): the auth service times out and the gateway answers
#       500, so the token check was never the problem. The fixture must record the auth-service call (its
#       regression test is invalidated by lineage), check-config is dropped while its worker still runs, a
#       latency check is added and the fix moves to the auth client. check-config's result then arrives late.
#   v3  new_constraint from the user (caused by the fix's result): the fix touched the session cookie, so a
#       logout test is added (a patch) and the completed verify step must run again.
#
# Usage: samples/record_login_fix_replans.sh OUT.jsonl | --update   (--update replaces samples/login-fix-replans.jsonl)
# Set PLANTRAIL to run another build, e.g. PLANTRAIL="python -m plantrail".
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# OUT, or --update to replace the sample itself: nothing is written into samples/ unless asked.
case "${1:-}" in
  --update) out=$here/login-fix-replans.jsonl ;;
  "" | -*) echo "usage: $0 OUT.jsonl | --update   (--update replaces samples/login-fix-replans.jsonl)" >&2; exit 2 ;;
  *) out=$1 ;;
esac
read -r -a plantrail <<< "${PLANTRAIL:-plantrail}"
rm -f "$out"

# Run one recording command with --json; print "seq N: <command>" and keep the seq in $seq.
record() {
  local reply subject=${3:-}
  reply=$("${plantrail[@]}" "$@" --json)
  seq=$(printf '%s\n' "$reply" | sed -n 's/^  "seq": \([0-9]*\),$/\1/p')
  [[ $subject == --* ]] && subject=""
  echo "seq $seq: $1 $subject"
}

"${plantrail[@]}" create "$out" --plan "$here/login-fix-replans.draft.json" --run login-fix-replans

record start "$out" reproduce
record complete "$out" reproduce \
  -e "npm test -- tests/login.test.ts: 1 failed: POST /api/login expected 200, got 500 (artifacts/login-fail.txt)"
record start "$out" capture-fixture
record complete "$out" capture-fixture -e "fixtures/login-500.har: POST /api/login -> 500 after 212 ms (gateway side only)"
record start "$out" regression-test
record complete "$out" regression-test \
  -e "tests/login.test.ts: 'rejects an expired token' replays login-500.har and fails: 500 != 401"
record start "$out" diagnose
record start "$out" check-config
record complete "$out" diagnose \
  -e "auth-service POST /v1/token times out after 200 ms and the gateway maps it to 500; the token check never runs (logs/auth-service.log:212, src/auth/client.ts:48)"
diagnosed=$seq

record replan "$out" --plan "$here/login-fix-replans.v2.draft.json" --reason failed_assumption \
  --why "diagnose shows the auth service times out and the gateway answers 500: the token check is not the cause, so the fix moves to the auth client and the fixture must record the auth-service call" \
  --caused-by "$diagnosed" --observation "logs/auth-service.log:212: upstream timeout after 200 ms"

# The v1 worker on check-config did not hear about v2: its result is stamped with version 1.
record complete "$out" check-config --plan-version 1 \
  -e "config/auth.yaml: token_secret matches vault secret/login (sha256 9f2c...); no change needed"

record start "$out" capture-fixture
record complete "$out" capture-fixture \
  -e "fixtures/login-timeout.har: POST /api/login -> POST /v1/token, no answer after 200 ms, gateway 500"
record start "$out" regression-test
record complete "$out" regression-test \
  -e "tests/login.test.ts: 'survives a slow auth service' replays login-timeout.har and fails: 500 != 200"
record start "$out" check-timeout
record complete "$out" check-timeout \
  -e "auth-service p95 is 340 ms over the last 24 h; src/auth/client.ts:48 sets timeout_ms: 200"
record start "$out" fix
record complete "$out" fix \
  -e "src/auth/client.ts: timeout 200 -> 1000 ms and one retry on 5xx; src/session.ts refreshes the session cookie after the retry (commit 3f9c2e1)"
fixed=$seq
record start "$out" verify
record complete "$out" verify -e "npm test -- tests/login.test.ts: 6 passed at 3f9c2e1"
record criterion "$out" login-test-passes --passed -e "npm test -- tests/login.test.ts: 6 passed at 3f9c2e1"

record replan "$out" --patch "$here/login-fix-replans.v3.patch.json" --reason new_constraint --actor user \
  --why "the fix also changes how src/session.ts refreshes the session cookie: cover logout before it ships" \
  --caused-by "$fixed" --observation "review of 3f9c2e1: src/session.ts changed"

record start "$out" logout-test
record complete "$out" logout-test \
  -e "tests/logout.test.ts: 'logout clears the refreshed cookie' passes at 7a1d04b"
record start "$out" verify
record complete "$out" verify -e "npm test -- tests/login.test.ts tests/logout.test.ts: 9 passed at 7a1d04b"
record criterion "$out" login-test-passes --passed -e "npm test -- tests/login.test.ts: 6 passed at 7a1d04b"
record criterion "$out" logout-test-passes --passed -e "npm test -- tests/logout.test.ts: 3 passed at 7a1d04b"
record finish "$out" --outcome complete --reason "login survives a slow auth service; logout is covered"

"${plantrail[@]}" verify "$out"
