#!/usr/bin/env bash
# Record samples/lineage-tour.jsonl and its fork samples/lineage-tour-staging.jsonl with the plantrail CLI itself
# (docs/lineage-tour.md walks through them): an API client regenerated from a service's OpenAPI schema, with
# lineage by digest.
#
#   the draft  snapshot takes the repository as an observation input and produces the schema; config takes the
#              task's initial input (the style guide) and produces the generator's config; generate consumes
#              both and produces the client, which test and publish consume. The plan is made from repo 9c1e4f2.
#   observe    while test runs, the repository moves to 4b7d0a1 (openapi.yaml changed): snapshot, which
#              consumed 9c1e4f2, becomes stale and the plan is flagged possibly stale.
#   snapshot   runs again and its schema's digest changes: generate, which consumed the old schema, becomes
#              stale; config, which consumed nothing that changed, is kept (it does not run again).
#   generate   runs again with a new client digest: test, in progress on the old client, is marked for
#              cancellation; it is abandoned (not charged) and becomes stale, and its worker's late result
#              lands on the orphan path (STALE_ATTEMPT). test runs again on the new client.
#   publish    requests its side effect (the upload to the registry, keyed by the release) and the worker dies
#              before it knows whether the upload happened: the effect is in doubt, and resume says to check
#              the registry before anything is uploaded again. The log ends there.
#   the fork   lineage-tour-staging.jsonl starts from the parent's state before publish (seq 17) to release
#              through a staging registry first: a replan made from the current repository (the
#              possibly-stale flag ends) adds the stage step, whose effect is requested and committed, then
#              publish's, and the run finishes complete. `verify --parent` checks the fork against its parent.
#
# Usage: samples/record_lineage_tour.sh OUT.jsonl [FORK.jsonl] | --update
#        (FORK defaults to OUT's name with -staging; --update replaces samples/lineage-tour.jsonl and
#        samples/lineage-tour-staging.jsonl)
# Set PLANTRAIL to run another build, e.g. PLANTRAIL="python -m plantrail".
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# OUT [FORK], or --update to replace the samples themselves: nothing is written into samples/ unless asked.
case "${1:-}" in
  --update) out=$here/lineage-tour.jsonl fork=$here/lineage-tour-staging.jsonl ;;
  "" | -*)
    echo "usage: $0 OUT.jsonl [FORK.jsonl] | --update   (--update replaces samples/lineage-tour*.jsonl)" >&2
    exit 2
    ;;
  *) out=$1 fork=${2:-${1%.jsonl}-staging.jsonl} ;;
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
rm -f "$out" "$fork"

# The draft validates on its own: every input names an output upstream of its consumer.
pt check "$here/lineage-tour.draft.json"
pt create "$out" --plan "$here/lineage-tour.draft.json" --run lineage-tour --observed repo=9c1e4f2

schema1=sha256:1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809
schema2=sha256:2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a
config=sha256:7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a29180f
client1=sha256:c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00
client2=sha256:d00dfeedd00dfeedd00dfeedd00dfeedd00dfeedd00dfeedd00dfeedd00dfeed

pt start "$out" snapshot
pt complete "$out" snapshot -e "openapi.yaml at 9c1e4f2" --artifact "schema=$schema1@build/openapi.yaml"
pt start "$out" config
pt complete "$out" config -e "generator.json per the style guide" --artifact "config=$config@build/generator.json"
# A step that declares outputs completes only with each of them: without the client, refused, the log unchanged.
pt start "$out" generate
expect 1 pt complete "$out" generate -e "acme-client 1.4.0 generated"
pt complete "$out" generate -e "acme-client 1.4.0 generated" --artifact "client=$client1@dist/acme-client-1.4.0.tgz"
pt start "$out" test

# The repository moves under the run: snapshot consumed 9c1e4f2, so it is stale; the plan is possibly stale.
pt observe "$out" repo 4b7d0a1 --dirty openapi.yaml
pt next "$out"
pt start "$out" snapshot
pt complete "$out" snapshot -e "openapi.yaml at 4b7d0a1: GET /orders gains a cursor parameter" \
  --artifact "schema=$schema2@build/openapi.yaml"
# The schema's digest changed: generate is stale; config is kept.
pt status "$out"
pt start "$out" generate
pt complete "$out" generate -e "acme-client 1.4.0 regenerated: Orders.list takes a cursor" \
  --artifact "client=$client2@dist/acme-client-1.4.0.tgz"
# test runs on the old client: marked for cancellation (resume exits 10 and says to abandon it).
expect 10 pt resume "$out"
pt abandon "$out" test --reason "the client it tests was regenerated"
# Its worker's result still arrives: recorded on the orphan path (STALE_ATTEMPT), never applied.
pt complete "$out" test --attempt 1 -e "w1: 48 contract tests pass against the old client"
pt start "$out" test
pt complete "$out" test -e "52 contract tests pass, including Orders.list with a cursor"

# publish requests its effect, then its worker dies: the upload is in doubt.
pt start "$out" publish
pt effect "$out" publish --requested release-acme-client-1.4.0 --target "registry: acme-client 1.4.0" \
  --before "registry: 1.3.2 is the latest"
expect 10 pt resume "$out"
pt verify "$out"

# The fork: the parent's state after test completed, released through a staging registry first.
pt fork "$out" --at-seq 17 -o "$fork" --reason "release through the staging registry first"
pt verify "$fork" --parent "$out"
# The new draft names the observation it was made from (the repository with openapi.yaml changed).
pt replan "$fork" --plan "$here/lineage-tour.staged.json" --reason new_constraint \
  --why "releases go through the staging registry first"
pt start "$fork" stage
pt effect "$fork" stage --requested stage-acme-client-1.4.0 --target "staging registry: acme-client 1.4.0" \
  --before "staging registry: 1.3.2 is the latest"
pt effect "$fork" stage --committed stage-acme-client-1.4.0 --result "staging registry: 1.4.0 is the latest"
pt complete "$fork" stage -e "staging registry accepted acme-client 1.4.0"
pt start "$fork" publish
pt effect "$fork" publish --requested release-acme-client-1.4.0 --target "registry: acme-client 1.4.0" \
  --before "registry: 1.3.2 is the latest"
pt effect "$fork" publish --committed release-acme-client-1.4.0 --result "registry: 1.4.0 is the latest"
pt complete "$fork" publish -e "registry accepted acme-client 1.4.0"
pt criterion "$fork" client-matches-schema --passed -e "the published 1.4.0 is generate's client from schema $schema2"
pt finish "$fork" --outcome complete --reason "acme-client 1.4.0 is released"
pt verify "$fork" --parent "$out"
