#!/usr/bin/env python3
"""Every path ARCHITECTURE.md names exists, and the page stays a map (at most 200 lines).

A path is a `backticked` token with a `/` or a file extension outside code blocks, or a
token ending in `/` or an extension inside one. It is looked for from the repository's
root, then from its section's base (the first line of the section's first code block, when
that line is a folder), and a bare file name also beside the path named before it on its
line (or beside a folder above it).

    scripts/check_map.py [ARCHITECTURE.md]
"""
import os
import re
import sys

MAX_LINES = 200
EXT = r"\.(rs|md|yaml|yml|sh|py|toml|json|lua|mjs|txt|png)"
PATHLIKE = re.compile(r"^[\w.\-/]+$")


def candidates(token, bases, beside):
    if "/" in token:
        yield token
    near = []
    while beside and not os.path.isabs(beside):
        near.append(beside)
        beside = os.path.dirname(beside)
    for b in near + bases:
        yield os.path.join(b, token)
    if "/" not in token:
        yield token


def main():
    page = sys.argv[1] if len(sys.argv) > 1 else "ARCHITECTURE.md"
    root = os.path.dirname(os.path.abspath(page))
    lines = open(page, encoding="utf-8").read().split("\n")
    problems = []
    if len(lines) > MAX_LINES:
        problems.append(f"{page}: {len(lines)} lines, more than the {MAX_LINES} a map may have")
    section_base, block_base, in_block, first_block_line = None, None, False, False
    for n, line in enumerate(lines, 1):
        if line.startswith("## "):
            section_base = None
        if line.startswith("```"):
            in_block = not in_block
            first_block_line = in_block
            block_base = None
            continue
        if in_block:
            tokens = re.findall(r"[\w.\-/]+", line)
            if first_block_line:
                first_block_line = False
                if len(tokens) == 1 and tokens[0].endswith("/"):
                    block_base = tokens[0]
                    if section_base is None:
                        section_base = block_base
                    if not os.path.isdir(os.path.join(root, block_base)):
                        problems.append(f"{page}:{n}: `{block_base}` does not exist")
                    continue
            tokens = [
                t
                for t in tokens
                if re.match(r"\w", t) and (t.endswith("/") or re.search(EXT + "$", t))
            ]
        else:
            tokens = [
                t
                for t in re.findall(r"`([^`]+)`", line)
                if PATHLIKE.match(t)
                and not t.startswith("/")
                and ("/" in t or re.search(EXT + "$", t))
            ]
        beside = None
        for t in tokens:
            bases = [b for b in (block_base if in_block else None, section_base) if b]
            found = None
            for c in candidates(t, bases, beside):
                if os.path.exists(os.path.join(root, c)):
                    found = c
                    break
            if found is None:
                problems.append(f"{page}:{n}: `{t}` names no file or folder")
                continue
            beside = os.path.dirname(found.rstrip("/")) if not found.endswith("/") else found
            if not found.endswith("/") and os.path.isdir(os.path.join(root, found)):
                beside = found
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"{page}: {len(lines)} lines, every path it names exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
