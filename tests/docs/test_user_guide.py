"""Every Python block of docs/guide.md runs as written, in order, in a fresh directory."""
import os
import re
import warnings
import paths

GUIDE = paths.DOCS / "guide.md"


def blocks():
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)


def test_guide_has_examples():
    assert len(blocks()) >= 10


def test_guide_examples_run(tmp_path):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        namespace = {"__name__": "guide"}
        for i, code in enumerate(blocks()):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    exec(compile(code, f"{GUIDE.name} block {i}", "exec"), namespace)
                except Exception as exc:
                    raise AssertionError(f"docs/guide.md python block {i} failed: {exc!r}\n{code}") from exc
    finally:
        os.chdir(cwd)
