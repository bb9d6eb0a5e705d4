#!/usr/bin/env bash
# Checks docs/upstream-map.md: every `path:line` reference in the table must
# point at a line of that file that defines the named C function, so the map
# cannot silently rot as code moves. Usage: check-upstream-map.sh <repo-root>
set -euo pipefail
root=${1:-.}
doc="$root/docs/upstream-map.md"
fail=0 rows=0
# Table rows look like: | upstream | `kc_fn` | `path/file.c:NN` | notes |
while IFS='|' read -r _ upstream cfn loc _; do
        cfn=$(echo "$cfn" | tr -d ' `')
        loc=$(echo "$loc" | tr -d ' `')
        [[ "$loc" =~ ^([a-z/_.]+):([0-9]+)$ ]] || continue
        file=${BASH_REMATCH[1]} line=${BASH_REMATCH[2]}
        rows=$((rows + 1))
        if [ ! -f "$root/$file" ]; then
                echo "upstream-map: $file does not exist (row for $cfn)"; fail=1; continue
        fi
        text=$(sed -n "${line}p" "$root/$file")
        # The function name must open its definition on that line.
        # (<name>_to_string is defined by KC_DEFINE_STRING_TABLE(<name>, ...).)
        base=${cfn%_to_string}
        base=${base%_from_string}
        if ! grep -qE "(^|[ *])${cfn}\(" <<<"$text" &&
                ! { [ "$base" != "$cfn" ] && sed -n "${line},$((line + 1))p" "$root/$file" | tr -d '\n' |
                        grep -qE "^KC_DEFINE_STRING_TABLE[A-Z_]*\( *${base},"; }; then
                actual=$(grep -nE "^[a-z].*[ *]${cfn}\(" "$root/$file" | head -1 | cut -d: -f1 || true)
                echo "upstream-map: $file:$line is not the definition of $cfn (found at line ${actual:-none})"
                fail=1
        fi
done < "$doc"
if [ "$rows" -lt 10 ]; then
        echo "upstream-map: only $rows rows with file:line found"; fail=1
fi
[ "$fail" -eq 0 ] && echo "upstream-map: $rows rows checked"
exit "$fail"
