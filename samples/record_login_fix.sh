#!/usr/bin/env bash
# Records samples/login-fix.jsonl with the plantrail CLI: a bug fix with one failed attempt and a retry.
#
# Usage: samples/record_login_fix.sh OUT.jsonl | --update   (--update replaces samples/login-fix.jsonl)
# Set PLANTRAIL to run another build, e.g. PLANTRAIL="python -m plantrail".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# OUT, or --update to replace the sample itself: nothing is written into samples/ unless asked.
case "${1:-}" in
  --update) log=$here/login-fix.jsonl ;;
  "" | -*) echo "usage: $0 OUT.jsonl | --update   (--update replaces samples/login-fix.jsonl)" >&2; exit 2 ;;
  *) log=$1 ;;
esac
read -r -a plantrail <<< "${PLANTRAIL:-plantrail}"
pt() { "${plantrail[@]}" "$@"; }
rm -f "$log"
pt create "$log" --plan "$here/login-fix.draft.json" --run login-fix
pt start "$log" reproduce
pt complete "$log" reproduce -e "pnpm vitest run tests/login.test.ts: 1 failed - expected 200, received 401 for a fresh session"
pt start "$log" diagnose
pt complete "$log" diagnose \
  -e "src/auth/session.ts:42 compares expiresAt (seconds) with Date.now() (milliseconds): every session looks expired"
pt start "$log" fix
pt fail "$log" fix --error "patched the comparison but tests/login.test.ts still fails: token refresh path uses the same check at src/auth/refresh.ts:17"
pt start "$log" fix
pt complete "$log" fix -e "apply_patch src/auth/session.ts: isExpired() converts expiresAt to ms; refresh.ts calls isExpired()"
pt start "$log" regression-test
pt complete "$log" regression-test \
  -e "tests/login.test.ts: +'keeps a session that expires in 10 minutes' (failed before the fix, passes after)" \
  -e "pnpm vitest run: 48 passed (48)"
pt criterion "$log" login-test-passes --passed -e "pnpm vitest run tests/login.test.ts: 3 passed"
pt criterion "$log" regression-test --passed -e "the new test fails on the parent commit and passes on the fix"
pt criterion "$log" suite-green --passed -e "pnpm vitest run: 48 passed (48) in 6.2s"
pt finish "$log" --outcome complete --reason "bug fixed, regression covered, suite green"
