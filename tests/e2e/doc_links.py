#!/usr/bin/env python3
"""Checks that every relative link in the given Markdown files resolves: the file or directory
exists (relative to the linking file), and a #fragment names a heading of the target Markdown file
by GitHub's anchor rules (text lowercased, punctuation other than '-' and '_' dropped, each space
a '-', a repeated heading suffixed -1, -2, ...) or an explicit <a name/id="...">.

  doc_links.py FILE.md...      # exit 0 if all resolve; else one line per broken link, exit 1
  doc_links.py --anchors FILE  # print the anchors of FILE (to write a link)

Links inside code fences and inline code are not links. Absolute URLs (http:, https:, mailto:)
are not checked: the tests reach no network.
"""
import re
import sys
import unicodedata
from pathlib import Path

FENCE = re.compile(r'^\s*(```|~~~)')
HEADING = re.compile(r'^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$')
INLINE_LINK = re.compile(r'!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)')
REF_DEF = re.compile(r'^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$')
HTML_ANCHOR = re.compile(r'<a\s+(?:name|id)="([^"]+)"', re.I)
CODE_SPAN = re.compile(r'(`+)(.+?)\1')


def prose_lines(text):
    """(line number, line) outside code fences."""
    fence = None
    for n, line in enumerate(text.split('\n'), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield n, line


def slug(heading):
    """GitHub's anchor of a heading's text (github-slugger)."""
    text = INLINE_LINK.sub(lambda m: m.group(1), heading)  # a link's text only
    text = CODE_SPAN.sub(lambda m: m.group(2), text)
    text = re.sub(r'<[^>]+>', '', text)  # inline HTML tags render no text
    text = text.lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in ' -_' or cat[0] in 'LNM':
            kept.append(ch)
    return ''.join(kept).replace(' ', '-')


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        for _, line in prose_lines(path.read_text(encoding='utf-8')):
            for name in HTML_ANCHOR.findall(line):
                found.add(name)
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f'{base}-{n}')
        cache[path] = found
    return cache[path]


def links(path):
    """(line number, target) of every link in PATH's prose."""
    for n, line in prose_lines(path.read_text(encoding='utf-8')):
        m = REF_DEF.match(line)
        if m:
            yield n, m.group(1)
            continue
        bare = CODE_SPAN.sub(lambda m: ' ' * len(m.group(0)), line)
        for m in INLINE_LINK.finditer(bare):
            yield n, m.group(2)


def check(path):
    errors = []
    for n, target in links(path):
        if not target or re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):
            continue
        file_part, _, fragment = target.partition('#')
        dest = (path.parent / file_part).resolve() if file_part else path.resolve()
        where = f'{path}:{n}: ({target})'
        if not dest.exists():
            errors.append(f'{where}: {file_part} does not exist')
        elif fragment:
            if dest.is_dir() or dest.suffix.lower() != '.md':
                errors.append(f'{where}: #{fragment} on a file that is not Markdown')
            elif fragment not in anchors(dest):
                errors.append(f'{where}: {dest.name} has no heading with anchor #{fragment}')
    return errors


def main(argv):
    if argv[:1] == ['--anchors']:
        for a in sorted(anchors(Path(argv[1]).resolve())):
            print(a)
        return 0
    errors, count = [], 0
    for name in argv:
        path = Path(name)
        count += sum(1 for _ in links(path))
        errors += check(path)
    for e in errors:
        print(e)
    print(f'doc_links: {len(argv)} files, {count} links, {len(errors)} broken', file=sys.stderr)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
