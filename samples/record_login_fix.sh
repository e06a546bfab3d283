#!/usr/bin/env bash
# Records samples/login-fix.jsonl with the plantrail CLI: a bug fix with one failed attempt and a retry.
set -euo pipefail
cd "$(dirname "$0")"
log=login-fix.jsonl
rm -f "$log"
plantrail create "$log" --plan login-fix.draft.json --run login-fix
plantrail start "$log" reproduce
plantrail complete "$log" reproduce -e "pnpm vitest run tests/login.test.ts: 1 failed - expected 200, received 401 for a fresh session"
plantrail start "$log" diagnose
plantrail complete "$log" diagnose \
  -e "src/auth/session.ts:42 compares expiresAt (seconds) with Date.now() (milliseconds): every session looks expired"
plantrail start "$log" fix
plantrail fail "$log" fix --error "patched the comparison but tests/login.test.ts still fails: token refresh path uses the same check at src/auth/refresh.ts:17"
plantrail start "$log" fix
plantrail complete "$log" fix -e "apply_patch src/auth/session.ts: isExpired() converts expiresAt to ms; refresh.ts calls isExpired()"
plantrail start "$log" regression-test
plantrail complete "$log" regression-test \
  -e "tests/login.test.ts: +'keeps a session that expires in 10 minutes' (failed before the fix, passes after)" \
  -e "pnpm vitest run: 48 passed (48)"
plantrail criterion "$log" login-test-passes --passed -e "pnpm vitest run tests/login.test.ts: 3 passed"
plantrail criterion "$log" regression-test --passed -e "the new test fails on the parent commit and passes on the fix"
plantrail criterion "$log" suite-green --passed -e "pnpm vitest run: 48 passed (48) in 6.2s"
plantrail finish "$log" --outcome complete --reason "bug fixed, regression covered, suite green"
