"""Write the shipped digits data (``examples/digits/*.ctf``) in UCI format, once.

UCIFastReader reads space-delimited records: here the label (0-9) first, then the 64 pixels, as
the MNIST files of the configuration spec's example. ``labels.map`` lists the labels 0..9, one per
line (line number = label id). The committed ``digits_train.txt``, ``digits_test.txt`` and
``labels.map`` were made by this script:

    python examples/legacy/make_data.py
"""
from __future__ import annotations

import os

HERE = os.path.dirname(os.path.abspath(__file__))
DIGITS = os.path.join(HERE, "..", "digits")


def ctf_to_uci(src: str, dst: str) -> int:
    n = 0
    with open(src, encoding="ascii") as fin, open(dst + ".tmp", "w", encoding="ascii", newline="\n") as fout:
        for line in fin:
            fields = {}
            for part in line.split("|")[1:]:
                name, *values = part.split()
                fields[name] = values
            label = fields["labels"].index("1")
            fout.write(" ".join([str(label), *fields["features"]]) + "\n")
            n += 1
    os.replace(dst + ".tmp", dst)
    return n


def main() -> None:
    for name in ("train", "test"):
        n = ctf_to_uci(os.path.join(DIGITS, f"digits_{name}.ctf"), os.path.join(HERE, f"digits_{name}.txt"))
        print(f"digits_{name}.txt: {n} records")
    with open(os.path.join(HERE, "labels.map"), "w", encoding="ascii", newline="\n") as fh:
        fh.write("".join(f"{i}\n" for i in range(10)))


if __name__ == "__main__":
    main()
