#!/usr/bin/env python3
"""Independent computation of the local-basic.jsonl expectations used in
fixture_test.go (run from /work/main: python3 history/testdata/local_basic_counts.py).

Windows (reference §3.3): walk the active branch (expected.json
activeBranchIds) in order; each boundary entry (expected.json windows[].entryId)
opens a window; the entries after it, up to the next boundary, belong to it;
entries before the first boundary are ignored. Items: message entries with
role user/assistant/toolResult/bashExecution/custom, custom_message entries
(the reminders; boundaries open windows and are not items) and
branch_summary entries. Text per history/render.go, written again here in
Python. Chars = len(str) = code points.
"""
import json, sys

base = 'testdata/pi-tree/local-basic'
exp = json.load(open(base + '.expected.json'))
ents = {}
for line in open(base + '.jsonl'):
    d = json.loads(line)
    if d['type'] != 'session':
        ents[d['id']] = d

def part(p):
    t = p.get('type')
    if t == 'text': return p['text']
    if t == 'thinking': return p['thinking']
    if t == 'image': return '[image %s]' % p['mimeType']
    if t == 'toolCall':
        o = {'tool': p['name']}
        if 'arguments' in p: o['arguments'] = p['arguments']
        return json.dumps(o, separators=(',', ':'), ensure_ascii=False)
    return json.dumps(p, separators=(',', ':'), ensure_ascii=False)

def content(c):
    return c if isinstance(c, str) else '\n'.join(part(p) for p in c)

def render(d):
    if d['type'] == 'message':
        m = d['message']; r = m['role']
        if r in ('user', 'assistant', 'toolResult', 'custom'): return content(m['content'])
        if r == 'bashExecution':
            out = m.get('output') or ''
            return 'Ran `%s`\n' % m['command'] + ('```\n%s\n```' % out if out else '(no output)')
        return None
    if d['type'] == 'custom_message': return content(d['content'])
    if d['type'] == 'branch_summary': return d['summary']
    return None

bounds = {w['entryId']: w['windowId'] for w in exp['windows']}
wins = []
for i in exp['activeBranchIds']:
    if i in bounds:
        wins.append((bounds[i], [])); continue
    if not wins: continue
    t = render(ents[i])
    if t is not None: wins[-1][1].append((i, t))

for wid, items in wins:
    print(wid, 'items', len(items), 'chars', sum(len(t) for _, t in items),
          'first', items[0][0], 'last', items[-1][0])
q = sys.argv[1] if len(sys.argv) > 1 else 'npx vitest run'
hits = [i for _, items in wins for i, t in items if q in t]
print('search %r: %d hits, first 10: %s' % (q, len(hits), hits[:10]))
print('all hits:', ','.join(hits))

def preview_size(wid, i, t, tool, ns):
    o = {'window_id': wid, 'item_id': i, 'role': 'x'}
    return len(json.dumps(o, separators=(',', ':'), ensure_ascii=False))

# Items of window 1 with tool_namespace notes (flat router calls and results),
# and the size of their list_items previews (JSON, default 1,000-char cap).
def tool_fields(d, calls):
    m = d.get('message') or {}
    if m.get('role') == 'assistant':
        for p in m['content'] if isinstance(m['content'], list) else []:
            if p.get('type') == 'toolCall':
                a = p.get('arguments') or {}
                if p['name'] in ('history', 'notes') and isinstance(a.get('action'), str):
                    return a['action'], p['name'], 'assistant'
                return p['name'], p.get('namespace', ''), 'assistant'
        return '', '', 'assistant'
    if m.get('role') == 'toolResult':
        c = calls.get(m.get('toolCallId'))
        if c and m['toolName'] in ('history', 'notes') and c[2]:
            return c[2], m['toolName'], 'tool'
        return m.get('toolName', ''), c[1] if c else '', 'tool'
    return '', '', m.get('role', d['type'])

calls = {}
for d in ents.values():
    m = d.get('message') or {}
    if m.get('role') == 'assistant' and isinstance(m['content'], list):
        for p in m['content']:
            if p.get('type') == 'toolCall':
                a = p.get('arguments') or {}
                act = a.get('action') if p['name'] in ('history', 'notes') and isinstance(a.get('action'), str) else ''
                calls[p['id']] = (p['name'], p.get('namespace', ''), act)
for wid, items in wins:
    for i, t in items:
        tool, ns, role = tool_fields(ents[i], calls)
        if ns == 'notes' or tool == 'read_file':
            role = {'toolResult': 'tool'}.get(role, role)
            o = {'window_id': wid, 'item_id': i, 'role': role, 'tool_name': tool}
            if ns: o['tool_namespace'] = ns
            o['truncated_content'] = t[:1000]; o['content_chars'] = len(t)
            print(wid[:8], i, role, tool, ns, 'preview json chars', len(json.dumps(o, separators=(',', ':'), ensure_ascii=False)))

# search_contents 'npx vitest run', limit 25: preview sizes and the 8,000 cap.
byid = {i: (wid, t) for wid, items in wins for i, t in items}
total = 0; kept = []
for i in hits:
    wid, t = byid[i]
    tool, ns, role = tool_fields(ents[i], calls)
    role = {'toolResult': 'tool', 'bashExecution': 'user'}.get(role, role)
    o = {'window_id': wid, 'item_id': i, 'role': role}
    if tool: o['tool_name'] = tool
    if ns: o['tool_namespace'] = ns
    o['truncated_content'] = t[:1000]; o['content_chars'] = len(t)
    n = len(json.dumps(o, separators=(',', ':'), ensure_ascii=False))
    if kept and total + n > 8000: break
    total += n; kept.append((i, n))
print('search cap: kept', len(kept), 'total', total, kept)
