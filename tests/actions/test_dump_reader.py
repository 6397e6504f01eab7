"""The dumpReader action's section keys, run through the command line."""
from __future__ import annotations

import textwrap

import pytest

from cntkio.cli import main
from cntkio.actions.runner import run
from cntkio.errors import ConfigError


def setup(tmp_path, lengths=(2, 1, 3), reader_extra="", section_extra=""):
    """A CTF file (sequence i, row t: F = 10*i + t, L = 100 + 10*i + t) and a dumpReader config."""
    rows = []
    for i, n in enumerate(lengths):
        for t in range(n):
            rows.append(f"{i} |F {10 * i + t} |L {100 + 10 * i + t}")
    (tmp_path / "d.txt").write_text("\n".join(rows) + "\n")
    cfg = tmp_path / "c.cntk"
    cfg.write_text(textwrap.dedent(f"""
        command = dump
        precision = float
        dump = [
            action = dumpReader
            outputFile = "{tmp_path / 'out' / 'dump.txt'}"
            minibatchSize = 100
            {section_extra}
            reader = [
                readerType = CNTKTextFormatReader
                file = "{tmp_path / 'd.txt'}"
                randomize = false
                {reader_extra}
                input = [ features = [ alias = F; dim = 1; format = dense ]
                          labels = [ alias = L; dim = 1; format = dense ] ]
            ]
        ]"""))
    return cfg, tmp_path / "out" / "dump.txt"


def test_defaults_one_sweep_streams_in_config_order_output_dir_created(tmp_path):
    cfg, out = setup(tmp_path)
    run([f"configFile={cfg}"])
    # lengths 2, 1, 3: T=3, rows: s0+s1 (0,1 | 10), s2 (20,21,22) -> time-major
    assert out.read_text().split("\n")[:-1] == ["0", "20", "1", "21", "10", "22",
                                                "100", "120", "101", "121", "110", "122"]


def test_stream_order_and_a_single_stream(tmp_path):
    cfg, out = setup(tmp_path)
    run([f"configFile={cfg}", "dump=[streams=labels:features]"])
    assert out.read_text().split()[:2] == ["100", "120"]
    run([f"configFile={cfg}", "dump=[streams=labels]"])
    assert len(out.read_text().split()) == 6


def test_unknown_stream_is_an_error_naming_the_streams(tmp_path):
    cfg, _ = setup(tmp_path)
    with pytest.raises(ConfigError) as err:
        run([f"configFile={cfg}", "dump=[streams=feature]"])
    assert err.value.path == "dump.streams" and "features, labels" in str(err.value)


def test_per_epoch_cap_and_epochs(tmp_path):
    cfg, out = setup(tmp_path, lengths=(1,) * 5)
    # epochs of 4 samples, minibatches of 1: at most 2 dumped per epoch, 3 epochs
    run([f"configFile={cfg}",
         "dump=[minibatchSize=1; epochSize=4; maxEpochs=3; maxMinibatchesPerEpoch=2; streams=features]"])
    # epoch e starts at sample 4e: sequences 0 1 | 4 0 | 3 4
    assert out.read_text().split() == ["0", "10", "40", "0", "30", "40"]
    run([f"configFile={cfg}", "dump=[minibatchSize=1; epochSize=4; maxEpochs=1; maxMinibatchesPerEpoch=0; "
                              "streams=features]"])
    assert out.read_text().split() == ["0", "10", "20", "30"]


def test_sort_output(tmp_path):
    cfg, out = setup(tmp_path, lengths=(1, 1, 1))
    run([f"configFile={cfg}", "dump=[sortOutput=true]"])
    assert out.read_text() == "0\n10\n100\n110\n120\n20\n"


def test_truncated_reader_with_rows_layout(tmp_path):
    cfg, out = setup(tmp_path, lengths=(5, 3), reader_extra="truncated = true; truncationLength = 2",
                     section_extra="streams = features; dumpLayout = rows; minibatchSize = 4")
    run([f"configFile={cfg}"])
    # one sweep (8 samples), 2 slots of 2 steps: slot 0 carries s0 (0..4), slot 1 s1 (10..12);
    # the next sequence starts at 8, past the epoch, so the slots drain:
    # [0 1 | 10 11], [2 3 | 12], [4]  -> time-major over the slots
    assert out.read_text().split() == ["0", "10", "1", "11", "2", "12", "3", "4"]


def test_subsets(tmp_path):
    cfg, out = setup(tmp_path, lengths=(1,) * 4)
    run([f"configFile={cfg}", "dump=[numSubsets=2; subsetNum=1; streams=features; epochSize=4]"])
    assert out.read_text().split() == ["10", "30"]
    with pytest.raises(ConfigError, match="subsetNum must be below numSubsets"):
        run([f"configFile={cfg}", "dump=[numSubsets=2; subsetNum=2]"])


@pytest.mark.parametrize("override,path", [
    ("dump=[minibatchSize=0]", "dump.minibatchSize"),
    ("dump=[epochSize=-3]", "dump.epochSize"),
    ("dump=[dumpLayout=diagonal]", "dump.dumpLayout"),
    ("dump=[sortOutput=maybe]", "dump.sortOutput"),
])
def test_bad_keys_name_their_path(tmp_path, override, path):
    cfg, _ = setup(tmp_path)
    with pytest.raises(ConfigError) as err:
        run([f"configFile={cfg}", override])
    assert err.value.path == path


def test_missing_output_file_and_reader(tmp_path, capsys):
    cfg = tmp_path / "c.cntk"
    cfg.write_text("command=d\nd=[action=dumpReader; minibatchSize=1; reader=[readerType=CNTKTextFormatReader]]\n")
    assert main([f"configFile={cfg}"]) == 1
    assert "d.outputFile" in capsys.readouterr().err
    cfg.write_text(f"command=d\nd=[action=dumpReader; minibatchSize=1; outputFile={tmp_path / 'o.txt'}]\n")
    assert main([f"configFile={cfg}"]) == 1
    assert "d.reader" in capsys.readouterr().err


def test_missing_data_file_is_reported(tmp_path, capsys):
    cfg, _ = setup(tmp_path)
    assert main([f"configFile={cfg}", f"dump=[reader=[file={tmp_path / 'nope.txt'}]]"]) == 1
    assert "nope.txt" in capsys.readouterr().err


def test_unrelated_undefined_variables_in_the_section_are_no_error(tmp_path):
    cfg, out = setup(tmp_path, section_extra="modelPath = $RunDir$/m.dnn")
    run([f"configFile={cfg}"])
    assert len(out.read_text().split()) == 12
