#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan+UBSan) and runs
# each for a fixed time over a copy of its seed corpus, two at a time.
#
# usage: bash scripts/fuzz.sh [seconds-per-target] [build-dir]
#   seconds-per-target  default 60
#   build-dir           default build-fuzz (relative to the repository root)
#
# Exits non-zero when any target crashes, leaks, times out (one input over
# 10 s), runs out of memory (2048 MB) or does not run, printing where its
# reproducer is (tests/fuzz/README.md: how to replay it). Nothing is written
# into the source tree: corpora, logs and artifacts go to <build-dir>/fuzz-run.
set -euo pipefail

secs=${1:-60}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${2:-build-fuzz}
case $build in /*) ;; *) build=$root/$build ;; esac
case $secs in '' | *[!0-9]*) echo "fuzz.sh: seconds must be a number: $secs" >&2; exit 2 ;; esac

# target:max_len (bytes): room for the largest seed and then some.
targets=(
        fuzz_grpc_frames:4096
        fuzz_cri_decode:4096
        fuzz_manifest:16384
        fuzz_replay:8192
        fuzz_http:32768
)
jobs_max=${KC_FUZZ_JOBS:-2} # the long runs use one job per target

echo "fuzz.sh: building in $build" >&2
mkdir -p "$build"
CC=clang cmake -S "$root" -B "$build" -DKC_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/fuzz-build.log" 2>&1 &&
        cmake --build "$build" -j2 >>"$build/fuzz-build.log" 2>&1 ||
        { tail -50 "$build/fuzz-build.log" >&2; exit 1; }

work=$build/fuzz-run
rm -rf "$work"
mkdir -p "$work"

run_one() {
        local name=$1 max_len=$2 dir=$work/$1 dict=() rc=0

        mkdir -p "$dir/corpus" "$dir/artifacts"
        cp -R "$root/tests/fuzz/corpus/$name/." "$dir/corpus/"
        [ -f "$root/tests/fuzz/$name.dict" ] && dict=(-dict="$root/tests/fuzz/$name.dict")
        # -close_fd_mask=3: the targets' own stdout/stderr (pleg-replay's error
        # lines, MHD's log) are dropped; libFuzzer's and the sanitizers'
        # reports still go to the log.
        (cd "$dir" && exec "$build/tests/fuzz/$name" -max_total_time="$secs" -max_len="$max_len" \
                -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -close_fd_mask=3 \
                -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "${dict[@]}" \
                "$dir/corpus") >"$dir/log" 2>&1 || rc=$?
        echo "$rc" >"$dir/rc"
}

echo "fuzz.sh: ${#targets[@]} targets, ${secs}s each, $jobs_max at a time" >&2
for t in "${targets[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
                wait -n || true
        done
        run_one "${t%%:*}" "${t##*:}" &
done
wait

failed=0
printf '%-18s %12s  %s\n' target execs "final coverage"
for t in "${targets[@]}"; do
        name=${t%%:*}
        dir=$work/$name
        rc=$(cat "$dir/rc" 2>/dev/null || echo missing)
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
        cov=$(grep -E '^#[0-9]+' "$dir/log" | grep 'cov:' | tail -1 || true)
        printf '%-18s %12s  %s\n' "$name" "${execs:-?}" "${cov:-no coverage line}"
        artifacts=$(find "$dir/artifacts" -type f 2>/dev/null | sort)
        if [ "$rc" != 0 ] || [ -n "$artifacts" ]; then
                failed=1
                echo "FAIL $name (exit $rc); log: $dir/log" >&2
                grep -E '^(==[0-9]+==ERROR|SUMMARY|ERROR: libFuzzer)|runtime error:' "$dir/log" | head -5 >&2 || true
                for a in $artifacts; do
                        echo "  reproducer: $a" >&2
                        echo "  replay:     $build/tests/fuzz/$name $a" >&2
                done
        fi
done
if [ "$failed" != 0 ]; then
        echo "fuzz.sh: FAILED (tests/fuzz/README.md: reproducing a crash)" >&2
        exit 1
fi
echo "fuzz.sh: every target ran ${secs}s without a finding" >&2
