#!/usr/bin/env python3
"""Independent computation of the Tree windows used in archive/index_test.go
TestFixtureWindows and coordinator/tree_test.go (run from /work/main:
python3 archive/testdata/tree_windows.py testdata/pi-tree/tree-multi.jsonl [LEAF]).

Rules (archive.Index.Branch): the valid manifests are read from the
fixture's expected.json (the generator's oracle, not contextd). Walk the
branch from the root to the leaf (default: the last entry). A valid manifest
whose entry and summary are both on the branch adds an archived window: its
summary first, then its archivedEntryIds that are items, boundaries
excluded; it closes the open window. A window boundary (custom_message
codex-context-window, details.contextManagement.kind "window") opens a
window. Other entries join the open window when they are items, except the
summaries of the branch's archives. Items: message, custom_message and
branch_summary entries.

Prints, per window: id, item count, kind, first three and last item ids.
"""
import json, sys


def load(f):
    ents = [json.loads(l) for l in open(f) if l.strip()][1:]
    return ents, {e['id']: e for e in ents}


def is_boundary(e):
    cm = ((e.get('details') or {}).get('contextManagement') or {})
    return e['type'] == 'custom_message' and e.get('customType') == 'codex-context-window' and cm.get('kind') == 'window'


def is_item(e):
    return e['type'] in ('message', 'custom_message', 'branch_summary')


def branch(byid, leaf):
    out, cur = [], leaf
    while cur:
        out.append(cur)
        cur = byid[cur].get('parentId')
    return out[::-1]


def windows(f, leaf=None):
    ents, byid = load(f)
    exp = json.load(open(f.replace('.jsonl', '.expected.json')))
    valid = {m['manifestEntryId']: m for m in exp['manifests'] if m['valid']}
    if leaf is None:
        leaf = ents[-1]['id']
    br = branch(byid, leaf)
    on = set(br)
    arch = {mid: m for mid, m in valid.items() if mid in on and m['data']['summaryEntryId'] in on}
    owned = {m['data']['summaryEntryId'] for m in arch.values()}
    wins, cur = [], None
    for i in br:
        e = byid[i]
        if i in arch:
            m = arch[i]
            items = [m['data']['summaryEntryId']] + [a for a in m['archivedEntryIds'] if is_item(byid[a]) and not is_boundary(byid[a])]
            wins.append((m['data']['windowId'], items, 'archived'))
            cur = None
            continue
        if is_boundary(e):
            wins.append((e['details']['contextManagement']['currentWindowId'], [], 'open'))
            cur = wins[-1]
            continue
        if cur is None or i in owned:
            continue
        if is_item(e):
            cur[1].append(i)
    return wins


if __name__ == '__main__':
    for w in windows(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None):
        print(w[0], len(w[1]), w[2], w[1][:3], w[1][-1:])
