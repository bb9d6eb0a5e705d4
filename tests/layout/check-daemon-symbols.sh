#!/usr/bin/env bash
# Checks that the daemon binary carries no test code: no test-harness
# function (kc_test_*) and no protobuf-c twin of a CRI decoder (*_pbc, the
# oracle of tests/harness/cri_pbc_oracle.c) is defined in it.
#
# usage: check-daemon-symbols.sh <nm> <cubelet binary>
set -euo pipefail

nm_bin=$1
binary=$2
syms=$("$nm_bin" --defined-only "$binary") || { echo "check-daemon-symbols: nm failed on $binary" >&2; exit 2; }
[ -n "$syms" ] || { echo "check-daemon-symbols: no symbols in $binary (stripped?)" >&2; exit 2; }
bad=$(printf '%s\n' "$syms" | awk '{ print $NF }' | grep -E '^kc_test_|_pbc$' || true)
if [ -n "$bad" ]; then
        echo "check-daemon-symbols: test code in $binary:" >&2
        printf '  %s\n' $bad >&2
        exit 1
fi
echo "check-daemon-symbols: $binary holds no test code"
