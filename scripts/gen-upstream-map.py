#!/usr/bin/env python3
# Regenerates docs/upstream-map.md from scripts/upstream-map.txt (upstream|C function|file|notes),
# looking up the line of each definition. Run from the repository root after moving code;
# tests/docs/check-upstream-map.sh fails when the table is stale.
import re,sys
rows=[]
out=[]
for line in open('scripts/upstream-map.txt'):
    line=line.rstrip('\n')
    if line.startswith('## '):
        out.append(''); out.append(line); out.append('')
        out.append('| upstream (Go) | cubelet (C) | where | notes |'); out.append('|---|---|---|---|')
        continue
    up,fn,path,notes=line.split('|')
    src=open(path).read().split('\n')
    ln=None
    for i,l in enumerate(src):
        if re.match(r'^[a-z].*[ *]'+re.escape(fn)+r'\(',l):
            ln=i+1;break
    if ln is None:
        # <name>_to_string and _from_string come from KC_DEFINE_STRING_TABLE(<name>, ...)
        base=re.sub(r'_(to|from)_string$','',fn)
        for i,l in enumerate(src):
            two=l+' '+(src[i+1].strip() if i+1<len(src) else '')
            if base!=fn and re.match(r'^KC_DEFINE_STRING_TABLE\w*\(\s*'+re.escape(base)+',',two):
                ln=i+1;break
    if ln is None: print('NOT FOUND',fn,path,file=sys.stderr); ln=0
    out.append(f'| `{up}` | `{fn}` | `{path}:{ln}` | {notes} |')
hdr='''# Upstream → cubelet map

Each upstream kubelet concept has a C counterpart named after it in
snake_case. Paths are relative to the repository root; line numbers point at
the definition and are checked by `tests/docs/check-upstream-map.sh` (CTest
`docs.upstream-map`), so this table cannot silently rot. Behaviour follows
`../shared/spec/UPSTREAM.md` (E2 baseline); differences are in
[deviations.md](deviations.md).
'''
open('docs/upstream-map.md','w').write(hdr+'\n'.join(out)+'\n')
