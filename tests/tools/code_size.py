#!/usr/bin/env python3
"""Lists functions over 80 lines and files over 450 lines in the userspace layers (base/, readers/, loader/, collectors/, profile/, exporter/).

  tests/tools/code_size.py [ROOT]     one line per offender; exit 1 if any is not an exception

A function is counted from the first line of its signature to its closing brace (lambdas and
local classes count toward the function around them). An exception is a comment containing
"size-exception: REASON" on the line above the signature (or above the file's first line for
the file limit); it is printed with its reason and does not fail.
"""
import os
import re
import sys

MAX_FUNCTION, MAX_FILE = 80, 450
DIRS = ("base", "readers", "loader", "collectors", "profile", "exporter")
CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|try|return)\b")
SCOPE = re.compile(r"^(template\s*<.*>\s*)?(namespace|struct|class|union|enum|extern)\b")


def strip(text):
    """The source with comments and string/char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, last line) of each function at namespace or class scope."""
    src = strip(text)
    stack = []  # per open brace: "scope", "function" or "other"
    found = []
    header_start = 0
    starts = []  # position of each open function's header
    for i, c in enumerate(src):
        if c in ";{}":
            if c == "{":
                header = src[header_start:i].strip()
                kind = "other"
                if all(k == "scope" for k in stack):
                    flat = " ".join(header.split())
                    if SCOPE.match(flat) and "(" not in flat.split("{")[0].split(":")[0]:
                        kind = "scope"
                    elif (")" in flat and not CONTROL.match(flat) and
                          not re.search(r"=\s*$", flat) and not re.match(r"^[\w:<>,\s*&]*=", flat)):
                        kind = "function"
                    elif flat.startswith("extern"):
                        kind = "scope"
                stack.append(kind)
                lead = len(src[header_start:i]) - len(src[header_start:i].lstrip())
                starts.append(header_start + lead)
            elif c == "}" and stack:
                kind = stack.pop()
                begin = starts.pop()
                if kind == "function":
                    first = src.count("\n", 0, begin) + 1
                    last = src.count("\n", 0, i) + 1
                    head = " ".join(src[begin:src.find("{", begin)].split())
                    m = re.search(r"([~\w:]+)\s*\(", head)
                    found.append((m.group(1) if m else head[:40], first, last))
            header_start = i + 1
        elif c == "#" and (i == 0 or src[i - 1] == "\n"):
            header_start = src.find("\n", i) + 1 or len(src)  # a preprocessor line ends a header
    return found


def exception(lines, line_no):
    above = lines[line_no - 2] if line_no >= 2 else ""
    return above.split("size-exception:", 1)[1].strip() if "size-exception:" in above else ""


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    failed = False
    for d in DIRS:
        for dirpath, _, files in sorted(os.walk(os.path.join(root, d))):
            for f in sorted(files):
                if not f.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                text = open(path, encoding="utf-8", errors="replace").read()
                lines = text.split("\n")
                count = len(lines) - (1 if lines[-1] == "" else 0)
                if count > MAX_FILE:
                    reason = exception(["", *lines], 1) if "size-exception:" in lines[0] else ""
                    print(f"{rel}: {count} lines (file limit {MAX_FILE})" +
                          (f" exception: {reason}" if reason else ""))
                    failed |= not reason
                for name, first, last in functions(text):
                    n = last - first + 1
                    if n <= MAX_FUNCTION:
                        continue
                    reason = exception(lines, first)
                    print(f"{rel}:{first}: {name}: {n} lines" +
                          (f" (exception: {reason})" if reason else f" (limit {MAX_FUNCTION})"))
                    failed |= not reason
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
