#!/usr/bin/env python3
"""Count the lines two Go packages share.

Usage: dupcount.py DIR_A DIR_B

Each package's non-test .go files are read in name order into one list of
lines. A line counts when, trimmed of whitespace, it is longer than 12
characters, is not a comment (does not start with //) and is not one of
the error-handling idioms `if err != nil {`, `return err`, `return nil, err`.
The script prints the total size of the matching blocks that
difflib.SequenceMatcher finds between the two lists (autojunk off).
"""

import difflib
import os
import sys

IDIOMS = {"if err != nil {", "return err", "return nil, err"}


def lines(pkg):
    out = []
    for name in sorted(os.listdir(pkg)):
        if not name.endswith(".go") or name.endswith("_test.go"):
            continue
        path = os.path.join(pkg, name)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            for line in f:
                s = line.strip()
                if len(s) <= 12 or s.startswith("//") or s in IDIOMS:
                    continue
                out.append(s)
    return out


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: dupcount.py DIR_A DIR_B\n")
        return 2
    a, b = lines(argv[1]), lines(argv[2])
    m = difflib.SequenceMatcher(None, a, b, autojunk=False)
    print(sum(block.size for block in m.get_matching_blocks()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
