"""The Python blocks of docs/numpy.md run, in order, in one namespace (each checks its own
numbers against NumPy)."""

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "numpy.md"


def test_numpy_page_snippets_run():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 5
    namespace = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/numpy.md block {i + 1}", "exec"), namespace)
