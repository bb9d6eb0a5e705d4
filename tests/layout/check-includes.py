#!/usr/bin/env python3
"""Checks that cubelet's #include graph points one way (docs/architecture.md).

Every module has a tier; a file of a module may include the public headers
(<module>/include/<module>/...) of its own module and of modules of a lower
tier, and its own module's internal headers, nothing else of cubelet's. A
public header never includes an internal one. The tiers are those of
CMakeLists.txt (KC_TIER_*), read from there so the two cannot disagree.

Usage: check-includes.py <repo-root>. Prints every violation; exit 1 if any.
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else '.'
cmake = open(os.path.join(root, 'CMakeLists.txt')).read()
tiers = {}
for name, tier in re.findall(r'set\(KC_TIER_kc_(\w+) (\d+)\)', cmake):
    # kc_kubelet_config -> kubelet/config (the library's folder)
    folder = name.replace('kubelet_', 'kubelet/') if name.startswith('kubelet_') else name
    tiers[folder] = int(tier)
if len(tiers) < 5:
    sys.exit(f'check-includes: only {len(tiers)} tiers found in CMakeLists.txt')
for folder in tiers:
    if not os.path.isdir(os.path.join(root, folder, 'include', folder)):
        sys.exit(f'check-includes: {folder}/include/{folder}/ is missing')

def module_of(path):
    """The module a repository path or include name belongs to (longest match)."""
    best = None
    for m in tiers:
        if path == m or path.startswith(m + '/'):
            if best is None or len(m) > len(best):
                best = m
    return best

errors = []
checked = 0
for folder in sorted(tiers):
    for dirpath, dirs, files in os.walk(os.path.join(root, folder)):
        rel_dir = os.path.relpath(dirpath, root)
        # a nested module (kubelet/config inside kubelet) is checked on its own
        if module_of(rel_dir) != folder:
            continue
        for f in files:
            if not f.endswith(('.c', '.h')):
                continue
            rel = os.path.join(rel_dir, f)
            public = rel.startswith(f'{folder}/include/')
            for n, line in enumerate(open(os.path.join(root, rel), errors='replace'), 1):
                m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
                if not m:
                    continue
                checked += 1
                inc = m.group(1)
                where = f'{rel}:{n}: #include "{inc}"'
                target = module_of(inc)
                if target is not None and os.path.isfile(os.path.join(root, target, 'include', inc)):
                    if target != folder and tiers[target] >= tiers[folder]:
                        errors.append(f'{where}: {folder} (tier {tiers[folder]}) may not include '
                                      f'{target} (tier {tiers[target]})')
                    continue
                # Not a public header: it must be one of this module's own
                # files, found beside the includer or at the module's root.
                local = [os.path.normpath(os.path.join(rel_dir, inc)), os.path.normpath(os.path.join(folder, inc))]
                found = [p for p in local if os.path.isfile(os.path.join(root, p))]
                if not found:
                    if target is not None:
                        errors.append(f'{where}: no such public header {target}/include/{inc}')
                    continue  # generated (api.pb-c.h) or a system header in quotes
                if any(module_of(p) != folder for p in found):
                    errors.append(f'{where}: reaches into another module\'s files')
                elif public:
                    errors.append(f'{where}: a public header includes an internal one')

for e in errors:
    print('check-includes:', e)
if checked < 100:
    print(f'check-includes: only {checked} includes seen')
    sys.exit(1)
print(f'check-includes: {checked} includes in {len(tiers)} modules checked, {len(errors)} violations')
sys.exit(1 if errors else 0)
