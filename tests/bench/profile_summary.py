"""Summarise a py-spy raw (collapsed stacks) profile: where the samples went.

    python -m tests.bench.profile_summary /tmp/profile/tandem-n50.txt [--top 25] [--match chat/]

Each line of py-spy's ``-f raw`` output is ``frame;frame;...;frame COUNT``, outermost first
(with ``--threads`` the first frame names the thread). Printed: samples per thread, the
functions samples were in (self, innermost frame), and the functions on the stack (inclusive,
counted once per sample), each with its share of all samples.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

_LINE_NO = re.compile(r":\d+\)$")


def frame_name(frame: str) -> str:
    """``handle (daphne/server.py:123)`` -> ``handle (daphne/server.py)``: lines merged."""
    return _LINE_NO.sub(")", frame.strip())


def summarise(text: str) -> tuple[int, Counter[str], Counter[str], Counter[str]]:
    total = 0
    threads, own, inclusive = Counter[str](), Counter[str](), Counter[str]()
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        frames = [frame_name(f) for f in stack.split(";")]
        total += samples
        if frames[0].startswith(("thread", "process")):
            threads[frames[0]] += samples
            frames = frames[1:] or frames
        own[frames[-1]] += samples
        for name in set(frames):
            inclusive[name] += samples
    return total, threads, own, inclusive


def report(text: str, top: int = 25, match: str = "") -> str:
    """The summary; with ``match``, only functions whose name contains it (e.g. ``chat/``)."""
    total, threads, own, inclusive = summarise(text)
    if not total:
        return "no samples"
    lines = [f"{total} samples"]
    for title, counter in (("threads", threads), ("self", own), ("inclusive", inclusive)):
        lines.append(f"-- {title} --")
        chosen = [(k, n) for k, n in counter.most_common() if title == "threads" or match in k]
        lines += [f"{n / total:6.1%}  {name}" for name, n in chosen[:top]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--match", default="", help="only functions whose name contains this")
    args = parser.parse_args()
    print(report(args.path.read_text(), args.top, args.match))


if __name__ == "__main__":
    main()
