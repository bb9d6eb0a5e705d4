#!/usr/bin/env bash
# Runs one `cubelet pleg-replay` scenario and checks its output.
#
#   run-scenario.sh <cubelet-binary> <script.jsonl> <expected>
#       The replay must exit 0, print exactly <expected> on stdout, and its
#       stderr must not mention "AddressSanitizer" or "runtime error:"
#       (sanitizer reports).
#
#   run-scenario.sh --bad <cubelet-binary> <script.jsonl> <stderr-substrings> [<expected-stdout>]
#       The replay must exit 2. Every line of <stderr-substrings> must occur
#       in stderr as a fixed string; the first one must be the
#       "pleg-replay: line N: " prefix that names the bad line. Every stdout
#       line must come from an op before line N, and when <expected-stdout>
#       is given stdout must equal it exactly. No sanitizer report either.
#
# On failure a unified diff (or the reason) is printed and the exit status is 1.
set -euo pipefail

usage() {
        echo "usage: $0 <cubelet-binary> <script.jsonl> <expected>" >&2
        echo "       $0 --bad <cubelet-binary> <script.jsonl> <stderr-substrings> [<expected-stdout>]" >&2
        exit 64
}

mode=good
if [[ ${1:-} == --bad ]]; then
        mode=bad
        shift
        [[ $# -eq 3 || $# -eq 4 ]] || usage
else
        [[ $# -eq 3 ]] || usage
fi
bin=$1
script=$2
want=$3
want_stdout=${4:-}

for f in "$bin" "$script" "$want" ${want_stdout:+"$want_stdout"}; do
        if [[ ! -e $f ]]; then
                echo "FAIL: $f does not exist" >&2
                exit 1
        fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rc=0
"$bin" pleg-replay "$script" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?

fail() {
        echo "FAIL: $script: $*" >&2
        if [[ -s $tmp/stderr ]]; then
                echo "--- stderr of the replay:" >&2
                cat "$tmp/stderr" >&2
        fi
        exit 1
}

if grep -qF -e AddressSanitizer -e 'runtime error:' "$tmp/stderr"; then
        fail "sanitizer report on stderr"
fi

if [[ $mode == good ]]; then
        if ! diff -u --label "expected ($want)" --label "actual (stdout)" "$want" "$tmp/stdout" >&2; then
                fail "stdout differs from $want"
        fi
        if [[ $rc -ne 0 ]]; then
                fail "exit status $rc, want 0"
        fi
        exit 0
fi

# --bad
if [[ $rc -ne 2 ]]; then
        fail "exit status $rc, want 2"
fi
first=1
bad_line=
while IFS= read -r sub || [[ -n $sub ]]; do
        [[ -n $sub ]] || continue
        if [[ $first -eq 1 ]]; then
                first=0
                if [[ $sub =~ ^pleg-replay:\ line\ ([0-9]+):\ ?$ ]]; then
                        bad_line=${BASH_REMATCH[1]}
                else
                        fail "first line of $want must be 'pleg-replay: line N: ', got '$sub'"
                fi
        fi
        if ! grep -qF -e "$sub" "$tmp/stderr"; then
                fail "stderr lacks '$sub'"
        fi
done <"$want"
if [[ -z $bad_line ]]; then
        fail "$want holds no 'pleg-replay: line N: ' line"
fi
n=0
while IFS= read -r out || [[ -n $out ]]; do
        n=$((n + 1))
        if [[ ! $out =~ ^\{\"line\":([0-9]+), ]]; then
                fail "stdout line $n is not a replay record: $out"
        fi
        if ((BASH_REMATCH[1] >= bad_line)); then
                fail "stdout line $n comes from line ${BASH_REMATCH[1]}, at or after the bad line $bad_line"
        fi
done <"$tmp/stdout"
if [[ -n $want_stdout ]]; then
        if ! diff -u --label "expected ($want_stdout)" --label "actual (stdout)" "$want_stdout" "$tmp/stdout" >&2; then
                fail "stdout differs from $want_stdout"
        fi
fi
exit 0
