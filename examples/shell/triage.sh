#!/usr/bin/env bash
# Route a request to a skill, then have a model draft a first reply for it.
#
#   examples/shell/triage.sh "the app crashes when I click save"
#
# Uses a running `switchboard serve` when SWITCHBOARD_SERVER names one (warm: tens of milliseconds
# for a claude:haiku call); otherwise, or when it does not answer, switchboard runs in process.
# Skills come from switchboard.yaml or SWITCHBOARD_ROUTE_SKILLS; the model from SWITCHBOARD_SPEC.
set -u

request="${1:?usage: triage.sh REQUEST}"
spec="${SWITCHBOARD_SPEC:-claude:haiku}"

skill=$(switchboard route --print skill "$request")
status=$?
case $status in
  0) ;;                                                      # routed: $skill holds its name
  10) echo "no skill fits; leaving it to a human" >&2; exit 10 ;;
  *) exit "$status" ;;                                       # switchboard already said why on stderr
esac

reply=$(switchboard call "$spec" "Draft a one-line first reply to this $skill request: $request")
status=$?
case $status in
  0) printf '%s\t%s\n' "$skill" "$reply" ;;
  20 | 21 | 23 | 24) echo "rate limited, overloaded or timed out: try again later" >&2; exit 75 ;;
  22) echo "the provider refused the credentials: check ANTHROPIC_API_KEY" >&2; exit 77 ;;
  *) exit "$status" ;;
esac
