"""Copy CNTK's end-to-end corpus out of a git mirror of CNTK's repository into tests/endtoend/corpus.

    python tests/endtoend/vendor_corpus.py [/work/.mirror/imatiach-msft+CNTK/repo]

Writes, below ``tests/endtoend/corpus/`` and at the paths they have in CNTK's repository:

* every ``.cntk`` configuration of ``Examples/`` and ``Tests/EndToEndTests/`` (the 121 files the
  issue counts, less the six MLF label files named ``*.mlf.cntk``, which are data);
* every ``.bs``, ``.ndl`` and ``.mel`` file below those two folders, and the network and
  helper files written as ``.txt`` that the configurations name (:data:`EXTRA`);
* the ``run-test``, ``run-test-common`` and ``testcases.yml`` of every end-to-end test that runs
  one of these configurations;
* ``baseline_facts.json``: per end-to-end test, the facts of its baseline log that the tests
  check (:func:`cntkio.endtoend.baseline.read_baseline`), read from the baseline file named there;
* ``SOURCES.md``: the repository, commit and path of each file.

Run it again after changing :data:`EXTRA` or the mirror; it never runs in CI.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")
SRC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "src")
REPOSITORY = "github.com/imatiach-msft/CNTK (a mirror of github.com/Microsoft/CNTK)"

#: files other than configs and .bs/.ndl/.mel that configurations read as network or MEL text
EXTRA = [
    "Tests/EndToEndTests/Speech/DNN/DiscriminativePreTraining/macros.txt",
    "Tests/EndToEndTests/Speech/DNN/DiscriminativePreTraining/dnn.txt",
    "Tests/EndToEndTests/Speech/DNN/DiscriminativePreTraining/dnn_1layer.txt",
    "Tests/EndToEndTests/Speech/DNN/SequenceTraining/macros.txt",
    "Tests/EndToEndTests/Speech/DNN/SequenceTraining/dnn.txt",
    "Tests/EndToEndTests/Speech/DNN/SequenceTraining/dnn_1layer.txt",
    "Tests/EndToEndTests/Examples/Text/Miscellaneous/SLU/Config/lstmNDL.txt",
    "Tests/EndToEndTests/Examples/Text/Miscellaneous/SLU/Config/rnnluModelEditor.txt",
    "Examples/Speech/Miscellaneous/AMI/cntk_config/PACRnn.txt",
    "Examples/Speech/Miscellaneous/AMI/cntk_config/lstmp-3layer.txt",
    "Tests/EndToEndTests/Examples/Image/Deprecated/CIFAR-10/16to32.txt",
    "Tests/EndToEndTests/Examples/Image/Deprecated/CIFAR-10/32to64.txt",
    "Tests/EndToEndTests/ParallelTraining/AsynchronousSGD/16to32.txt",
    "Tests/EndToEndTests/ParallelTraining/AsynchronousSGD/32to64.txt",
]

#: baseline files in the order one is preferred (a CPU run on Linux first)
BASELINES = ["baseline.linux.cpu.txt", "baseline.cpu.txt", "baseline.linux.txt", "baseline.txt",
             "baseline.linux.gpu.txt", "baseline.gpu.txt", "baseline.windows.cpu.txt", "baseline.windows.txt",
             "baseline.windows.gpu.txt", "baseline.windows.release.cpu.txt"]


def git(mirror: str, *args: str) -> str:
    return subprocess.run(["git", "-C", mirror, *args], check=True, capture_output=True, text=True).stdout


def main(mirror: str) -> None:
    sys.path.insert(0, SRC)
    from cntkio.endtoend.baseline import read_baseline

    sys.path.insert(0, HERE)
    from cases import CASES

    commit = git(mirror, "rev-parse", "HEAD").strip()
    tree = git(mirror, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    in_corpus = [p for p in tree if p.startswith(("Examples/", "Tests/EndToEndTests/"))]
    wanted = [p for p in in_corpus if (p.endswith(".cntk") and not p.endswith(".mlf.cntk"))
              or p.endswith((".bs", ".ndl", ".mel"))] + EXTRA
    test_dirs = sorted({c.runtest.rsplit("/", 1)[0] for c in CASES if c.runtest})
    facts = {}
    for d in test_dirs:
        for name in ("run-test", "testcases.yml"):
            if f"{d}/{name}" in tree:
                wanted.append(f"{d}/{name}")
        parent = d
        while parent.startswith("Tests/EndToEndTests"):     # the run-test-common files it may source
            if f"{parent}/run-test-common" in tree:
                wanted.append(f"{parent}/run-test-common")
            parent = parent.rsplit("/", 1)[0]
        for b in BASELINES:
            if f"{d}/{b}" not in tree:
                continue
            try:        # the mirror lacks the content of a few large files
                text = git(mirror, "show", f"HEAD:{d}/{b}")
            except subprocess.CalledProcessError:
                facts[d] = {"baseline": None, "missing": f"{d}/{b} (its content is not in the mirror)", "runs": []}
                continue
            facts[d] = {"baseline": f"{d}/{b}", "runs": [r.to_dict() for r in read_baseline(text)]}
            break
    wanted = sorted(set(wanted))
    for p in wanted:
        dest = os.path.join(OUT, p)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        data = subprocess.run(["git", "-C", mirror, "show", f"HEAD:{p}"], check=True, capture_output=True).stdout
        with open(dest, "wb") as f:
            f.write(data)
    with open(os.path.join(OUT, "baseline_facts.json"), "w") as f:
        json.dump(facts, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(OUT, "SOURCES.md"), "w") as f:
        f.write("# Where these files come from\n\n"
                f"Repository: {REPOSITORY}, commit `{commit}` (April 2017), MIT licence.\n"
                "Copied unchanged by `python tests/endtoend/vendor_corpus.py`; each file keeps its path in\n"
                "that repository. `baseline_facts.json` holds facts read from the baseline logs named in it\n"
                "(same commit) by `cntkio.endtoend.baseline.read_baseline`.\n\n")
        for p in wanted:
            f.write(f"- `{p}`\n")
    print(f"{len(wanted)} files, {len(facts)} baselines, commit {commit}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/imatiach-msft+CNTK/repo")
