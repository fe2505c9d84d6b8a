"""Summarise a py-spy raw (collapsed stacks) profile: where the samples went.

    python -m tests.bench.profile_summary /tmp/profile/tandem-n50.txt [--top 25]

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


def report(text: str, top: int = 25) -> str:
    total, threads, own, inclusive = summarise(text)
    if not total:
        return "no samples"
    lines = [f"{total} samples"]
    for title, counter in (("threads", threads), ("self", own), ("inclusive", inclusive)):
        lines.append(f"-- {title} --")
        lines += [f"{n / total:6.1%}  {name}" for name, n in counter.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    print(report(args.path.read_text(), args.top))


if __name__ == "__main__":
    main()
