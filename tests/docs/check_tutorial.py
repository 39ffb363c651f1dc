#!/usr/bin/env python3
"""The tutorial cannot rot: every C++ block of docs/tutorial.md names its file on its first line
(`// examples/tutorial/NAME.cpp`) and must equal that file byte for byte, and every program in
examples/tutorial/ must appear in the tutorial. The programs themselves are built and run as CTest
tests (tests/CMakeLists.txt). An output block marked `<!-- output of examples/tutorial/NAME.cpp -->`
on the line before it must equal what that program prints (only for programs whose output does not
depend on the machine's floating-point kernels), checked when the folder of the built programs is given.
README.md's C++ blocks that start `// excerpt of examples/tutorial/NAME.cpp` must be lines of that
program in its order.
Usage: check_tutorial.py <repository root> [--update | --programs <build>/examples/tutorial];
--update copies each file into its block instead of comparing."""
import pathlib
import re
import subprocess
import sys
import tempfile

root = pathlib.Path(sys.argv[1])
tutorial = root / "docs/tutorial.md"
markdown = tutorial.read_text()
programs = pathlib.Path(sys.argv[3]).resolve() if sys.argv[2:3] == ["--programs"] and len(sys.argv) == 4 else None
if sys.argv[2:] == ["--update"]:
    def copy_file(match):
        path = re.fullmatch(r"// (examples/tutorial/[\w.-]+\.cpp)", match.group(1).split("\n", 1)[0])
        return "```cpp\n" + (root / path.group(1)).read_text() + "```" if path else match.group(0)
    markdown = re.sub(r"^```cpp\n(.*?)^```$", copy_file, markdown, flags=re.S | re.M)
    tutorial.write_text(markdown)
blocks = re.findall(r"^```cpp\n(.*?)^```$", markdown, flags=re.S | re.M)
problems = []
shown = set()
for i, block in enumerate(blocks, 1):
    first = block.split("\n", 1)[0]
    match = re.fullmatch(r"// (examples/tutorial/[\w.-]+\.cpp)", first)
    if not match:
        problems.append(f"C++ block {i} does not start with '// examples/tutorial/<file>.cpp': {first!r}")
        continue
    path = match.group(1)
    if path in shown:
        problems.append(f"C++ block {i}: {path} is shown twice")
    shown.add(path)
    file = root / path
    if not file.is_file():
        problems.append(f"C++ block {i}: {path} does not exist")
    elif file.read_text() != block:
        problems.append(f"C++ block {i} differs from {path}: run tests/docs/check_tutorial.py . --update")
for file in sorted((root / "examples/tutorial").glob("*.cpp")):
    path = file.relative_to(root).as_posix()
    if path not in shown:
        problems.append(f"{path} is not shown in docs/tutorial.md")
if not blocks:
    problems.append("docs/tutorial.md has no C++ blocks")
outputs = re.findall(r"^<!-- output of (examples/tutorial/[\w.-]+\.cpp) -->\n```\n(.*?)^```$", markdown, flags=re.S | re.M)
for path, expected in outputs if programs else []:
    program = programs / ("tutorial_" + pathlib.Path(path).stem)
    with tempfile.TemporaryDirectory() as work:
        run = subprocess.run([str(program)], cwd=work, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        problems.append(f"{program} exited with {run.returncode}: {run.stderr}")
    elif run.stdout != expected:
        problems.append(f"the output shown for {path} differs from what it prints:\n{run.stdout}")
# README.md shows excerpts: a C++ block whose first line is `// excerpt of examples/tutorial/NAME.cpp`
# must be that program's lines, in its order, with lines left out between them (blank lines aside).
excerpts = re.findall(r"^```cpp\n// excerpt of (examples/tutorial/[\w.-]+\.cpp)\n(.*?)^```$",
                      (root / "README.md").read_text(), flags=re.S | re.M)
for path, excerpt in excerpts:
    source = (root / path).read_text().split("\n") if (root / path).is_file() else []
    at = 0
    for line in (l for l in excerpt.split("\n") if l.strip()):
        while at < len(source) and source[at] != line:
            at += 1
        if at == len(source):
            problems.append(f"README.md's excerpt of {path}: {line!r} is not in the program (after the lines before it)")
            break
        at += 1
for p in problems:
    print(f"check_tutorial: {p}", file=sys.stderr)
if problems:
    sys.exit(1)
checked = f" and {len(outputs)} outputs their programs' output" if programs else ""
print(f"check_tutorial: {len(blocks)} blocks of docs/tutorial.md equal their files in examples/tutorial/{checked}; "
      f"{len(excerpts)} excerpts in README.md match theirs")
