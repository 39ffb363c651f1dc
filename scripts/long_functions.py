#!/usr/bin/env python3
"""Lists the C++ functions longer than a limit (default 80 lines, signature to closing brace), so that
"no function over about 80 lines in examples/ or the library" stays true.

Usage: long_functions.py <repository root> [--limit N] [folder ...]
The folders default to the library layers and examples/. Prints one line a function, `file:line: name
(N lines)`, longest first, and exits 1 when there is any, 0 when there is none.

A brace-matching scan rather than a parser: comments, string and character literals and preprocessor
lines are blanked first; a `{` at namespace or class scope whose head (the text since the previous `;`,
`{` or `}`) holds a `(` and does not end in `=` opens a function, and everything up to its matching `}`
(lambdas and local classes included) counts towards it. A constructor's member initialisers written with
braces (`a_{x}`) are part of its head.
"""
import pathlib
import re
import sys

LIBRARY = ["autograd", "io", "nn", "optim", "train", "models", "datasets", "distributed", "examples"]
SUFFIXES = {".cpp", ".hpp", ".h", ".cc"}


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # A directive, with its continuation lines.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = c == "\n"
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
        elif c == "R" and text.startswith('R"', i) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2 : open_paren]
            j = text.find(")" + delimiter + '"', open_paren)
            j = n if j < 0 else j + len(delimiter) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else " ")
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(head):
    """The name before the parameter list of a function's head (its first `(` outside <...>)."""
    match = re.search(r"([~\w:<>]+(?:operator\s*\S+?)?)\s*\(", head)
    return match.group(1) if match else head.strip()[:40]


def functions(text):
    """(first line, last line, name) of each function defined in the text."""
    code = blank(text)
    found = []
    # Each entry: "scope" (namespace, class, file) or "body" (a function's, or a brace inside one).
    stack = ["scope"]
    head_start = 0
    opened = None  # (index of the head's start, name) of the open function at the outermost body level
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c in ";{}" and stack[-1] == "scope":
            if c == "{":
                head = code[head_start:i]
                is_function = "(" in head and not re.search(r"=\s*$", head) and not re.match(
                    r"\s*(template\s*<.*>\s*)?(namespace|class|struct|union|enum)\b", head, re.S)
                if is_function:
                    opened = (head_start, function_name(head))
                    stack.append("body")
                else:
                    stack.append("scope")
                    head_start = i + 1
            elif c == "}":
                if len(stack) > 1:
                    stack.pop()
                head_start = i + 1
            else:
                head_start = i + 1
        elif c == "{":
            stack.append("body")
        elif c == "}":
            stack.pop()
            if stack[-1] == "scope":
                rest = code[i + 1 :].lstrip()
                if rest[:1] in (",", "{"):
                    # A member initialiser in braces: the constructor's head goes on.
                    i += 1
                    continue
                start = opened[0] + len(code[opened[0] :]) - len(code[opened[0] :].lstrip())
                first = code.count("\n", 0, start) + 1
                last = code.count("\n", 0, i) + 1
                found.append((first, last, opened[1]))
                head_start = i + 1
        i += 1
    return found


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1])
    args = argv[2:]
    limit = 80
    if args[:1] == ["--limit"]:
        limit = int(args[1])
        args = args[2:]
    folders = args or LIBRARY
    rows = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            for first, last, name in functions(path.read_text(errors="replace")):
                length = last - first + 1
                if length > limit:
                    rows.append((length, f"{path.relative_to(root)}:{first}: {name} ({length} lines)"))
    for _, row in sorted(rows, key=lambda r: -r[0]):
        print(row)
    if rows:
        print(f"{len(rows)} function(s) over {limit} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
