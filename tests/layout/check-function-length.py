#!/usr/bin/env python3
"""Checks that no production function is longer than a limit (issue 13: 120 lines).

A function is counted from the first line of its definition to its closing
brace. The tree is clang-formatted with Linux braces, so a definition's body
opens with "{" alone in column 0 and closes with "}" alone in column 0; the
signature is the run of lines above the "{" back to one that starts in
column 0. Tests and benchmarks are not production code and are skipped.

Usage: check-function-length.py <repo-root> [limit]. Exit 1 on a violation.
"""
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else '.'
limit = int(sys.argv[2]) if len(sys.argv) > 2 else 120
skip = ('tests', 'bench', 'build', '.git', 'examples', 'docs', 'scripts')

longest = (0, '')
errors = []
functions = 0
for dirpath, dirs, files in os.walk(root):
    rel_dir = os.path.relpath(dirpath, root)
    top = rel_dir.split(os.sep)[0]
    if top in skip or top.startswith('build'):
        dirs[:] = []
        continue
    for f in files:
        if not f.endswith('.c'):
            continue
        rel = os.path.normpath(os.path.join(rel_dir, f))
        lines = open(os.path.join(root, rel), errors='replace').read().split('\n')
        for i, line in enumerate(lines):
            if line != '{':
                continue
            start = i - 1
            while start > 0 and lines[start][:1] in (' ', '\t'):
                start -= 1
            head = lines[start]
            if '(' not in head or head.startswith(('struct', 'enum', 'union', 'static const', 'const ')):
                continue  # an initializer or a type, not a function
            end = i
            while end < len(lines) and lines[end] != '}':
                end += 1
            n = end - start + 1
            functions += 1
            if n > longest[0]:
                longest = (n, f'{rel}:{start + 1}')
            if n > limit:
                errors.append(f'{rel}:{start + 1}: {n} lines (limit {limit}): {head.strip()[:70]}')

for e in errors:
    print('check-function-length:', e)
if functions < 500:
    print(f'check-function-length: only {functions} functions found')
    sys.exit(1)
print(f'check-function-length: {functions} functions, the longest {longest[0]} lines ({longest[1]})')
sys.exit(1 if errors else 0)
