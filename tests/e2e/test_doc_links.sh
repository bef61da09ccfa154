#!/usr/bin/env bash
# Every relative link in the docs resolves (tests/e2e/doc_links.py): README.md, docs/*.md, the
# deploy docs and runbooks, CHANGELOG.md. A file must exist; a #fragment must be a heading's
# anchor by GitHub's rules. First the checker itself, on a scratch tree, so a checker that
# accepts everything cannot pass. (The exporter binary, $1, is not used.)
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$E2E_DIR/../.." && pwd)
CHECK=("python3" "$E2E_DIR/doc_links.py")

mkdir -p "$WORK/d/sub"
cat >"$WORK/d/a.md" <<'MD'
# Title
## Config file (`--config.file`)
## Same
## Same
### rdma_netlink
## NVMe-oF stages: host & target
```
[not a link](nowhere.md)
```
Links: [1](#config-file---configfile) [2](#same-1) [3](sub/b.md#b-heading) [4](sub/)
`[code](nowhere.md)` [5](#rdma_netlink) [6](#nvme-of-stages-host--target) [7](https://x.invalid/)
MD
printf '# B heading\n[up](../a.md#title)\n' >"$WORK/d/sub/b.md"
"${CHECK[@]}" "$WORK/d/a.md" "$WORK/d/sub/b.md" >"$WORK/ok.out" 2>&1 ||
  fail "doc_links rejects valid links: $(cat "$WORK/ok.out")"
pass "doc_links accepts files, directories, GitHub anchors (duplicates, code, punctuation)"
printf '[x](missing.md) [y](a.md#no-such) [z](#same-2) [w](sub/b.md#title)\n' >"$WORK/d/bad.md"
set +e
"${CHECK[@]}" "$WORK/d/bad.md" >"$WORK/bad.out" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || fail "doc_links exit $rc on broken links, want 1: $(cat "$WORK/bad.out")"
[ "$(grep -c 'bad.md:1:' "$WORK/bad.out")" = 4 ] ||
  fail "doc_links did not report all 4 broken links: $(cat "$WORK/bad.out")"
pass "doc_links reports a missing file and missing anchors (4 of 4)"

cd "$ROOT"
files=(README.md docs/*.md deploy/README.md deploy/runbooks/*.md CHANGELOG.md)
"${CHECK[@]}" "${files[@]}" >"$WORK/repo.out" 2>&1 || fail "broken links: $(cat "$WORK/repo.out")"
pass "$(tail -n 1 "$WORK/repo.out")"
