#!/usr/bin/env python3
"""Compare two GradBench logs of one eval (adjit's and manual's) as a Markdown table.

usage: table.py EVAL ADJIT.jsonl MANUAL.jsonl

Per evaluate message (matched by id: both runs send the same inputs in the same order):
whether each tool's output was judged valid, and the mean of its "evaluate" timings.
Rows are the sizes (descriptions); primal and derivative are the eval's two functions in
order. Only the standard library is used.
"""

import json
import sys


def read(path):
    """{id: (function, description, mean seconds, valid)} and the order of ids."""
    messages, responses, valid, order = {}, {}, {}, []
    with open(path) as f:
        for line in f:
            entry = json.loads(line)
            if "message" in entry:
                m = entry["message"]
                if m.get("kind") == "evaluate":
                    messages[m["id"]] = m
                    order.append(m["id"])
                elif m.get("kind") == "analysis":
                    valid[m["of"]] = m.get("valid", False)
            elif "response" in entry:
                r = entry["response"]
                responses[r.get("id")] = r
    rows = {}
    for i in order:
        m, r = messages[i], responses.get(i, {})
        times = [t["nanoseconds"] for t in r.get("timings") or [] if t["name"] == "evaluate"]
        mean = sum(times) / len(times) / 1e9 if times else None
        ok = "valid" if valid.get(i) else ("failed" if not r.get("success") else "invalid")
        rows[i] = (m["function"], m.get("description", ""), mean, ok)
    return rows, order


def fmt(seconds):
    if seconds is None:
        return "–"
    if seconds < 1e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    return f"{seconds * 1e3:.2f} ms"


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    eval_name, adjit_log, manual_log = sys.argv[1:]
    adjit, order = read(adjit_log)
    manual, _ = read(manual_log)
    sizes = {}
    for i in order:
        function, description, _, _ = adjit[i]
        sizes.setdefault(description, []).append(i)
    # Rows whose harness computes the function by another algorithm than the reference are
    # marked, so nobody reads the ratio as an AD result (README: † det, ‡ ode).
    mark = {"det": " †", "ode": " ‡"}.get(eval_name, "")
    print(f"| eval | size | adjit valid | primal adjit | primal manual | ratio "
          f"| derivative adjit | derivative manual | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for description, ids in sizes.items():
        cells = []
        validity = "/".join(adjit[i][3] for i in ids)
        for i in ids[:2]:
            a, m = adjit[i][2], manual.get(i, (None, None, None, None))[2]
            ratio = f"{a / m:.2f}" if a and m else "–"
            cells += [fmt(a), fmt(m), ratio]
        while len(cells) < 6:
            cells.append("–")
        print(f"| {eval_name}{mark} | {description} | {validity} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
