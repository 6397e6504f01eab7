"""The cntkio command line and the command/action runner (configuration-files.txt: commands and
actions, command line, layered files, overrides, stderr, traceLevel, precision, deviceId)."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cntkio.cli import main
from cntkio.actions import get_action, known_actions, register_action
from cntkio.actions.runner import DeviceId, parse_device_id, run, stderr_log_path
from cntkio.errors import ConfigError
import paths

SRC = paths.SRC

CALLS: list[tuple[str, str, dict]] = []


def _record(section, name):
    """A test action: records the section name and a few resolved keys."""
    keys = {k: str(section(k)) for k in ("minibatchSize", "file", "tag") if section.exists(k)}
    CALLS.append((name, "record", keys))
    logging.getLogger("cntkio.test").warning("recorded %s", name)
    logging.getLogger("cntkio.test").info("info from %s", name)
    print(f"stderr text from {name}", file=sys.stderr)
    return name


register_action("recordTest", _record)


@pytest.fixture(autouse=True)
def _clear():
    CALLS.clear()
    yield
    CALLS.clear()


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# --- commands and actions ---------------------------------------------------------------------

def test_command_runs_sections_in_order_with_their_actions(tmp_path):
    cfg = write(tmp_path / "a.cntk", """
command = second:first
minibatchSize = 32          # top level: seen by every section
first = [ action = recordTest ; file = one.txt ]
second = [
    action = recordTest
    minibatchSize = 64
]
""")
    results = run([f"configFile={cfg}"])
    assert [r[0] for r in results] == ["second", "first"]
    assert CALLS == [("second", "record", {"minibatchSize": "64"}),
                     ("first", "record", {"minibatchSize": "32", "file": "one.txt"})]


def test_overrides_layered_files_and_section_merges_apply_in_order(tmp_path):
    a = write(tmp_path / "a.cntk", "command=s\ns=[action=recordTest; file=a.txt; tag=A]\n")
    b = write(tmp_path / "b.cntk", "s=[file=b.txt]\n")
    run([f"configFile={a}+{b}"])
    assert CALLS[-1][2] == {"file": "b.txt", "tag": "A"}
    run([f"configFile={a}", f"configFile={b}", "s=[tag=C]"])
    assert CALLS[-1][2] == {"file": "b.txt", "tag": "C"}
    # a later configFile wins over an earlier command-line assignment
    run([f"configFile={a}", "s=[file=cmd.txt]", f"configFile={b}"])
    assert CALLS[-1][2]["file"] == "b.txt"


def test_unknown_action_lists_the_known_ones_and_suggests(tmp_path):
    cfg = write(tmp_path / "a.cntk", "command=s\ns=[action=dumpReadr]\n")
    with pytest.raises(ConfigError) as err:
        run([f"configFile={cfg}"])
    msg = str(err.value)
    assert "unknown action 'dumpReadr'" in msg and "s.action" in msg
    for name in ("dumpReader", "train", "eval", "write"):
        assert name in msg
    assert "did you mean 'dumpReader'?" in msg


def test_unknown_action_fails_before_any_command_runs(tmp_path):
    cfg = write(tmp_path / "a.cntk", "command=ok:bad\nok=[action=recordTest]\nbad=[action=nope]\n")
    with pytest.raises(ConfigError):
        run([f"configFile={cfg}"])
    assert CALLS == []


def test_actions_are_case_insensitive_and_registered_ones_listed():
    assert get_action("RECORDTEST") is _record
    assert get_action("dumpreader").__name__ == "dump_reader"
    assert "recordTest" in known_actions() and "dumpReader" in known_actions()


def test_command_naming_no_section_is_an_error(tmp_path):
    cfg = write(tmp_path / "a.cntk", "command=trian\ntrain=[action=recordTest]\n")
    with pytest.raises(ConfigError, match="did you mean 'train'"):
        run([f"configFile={cfg}"])


# --- top-level settings -----------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("auto", DeviceId("auto")), ("cpu", DeviceId("cpu")), ("-1", DeviceId("cpu")),
    ("0", DeviceId("gpu", index=0)), ("3", DeviceId("gpu", index=3)), ("all", DeviceId("all")),
    ("*2", DeviceId("best", count=2)), ("AUTO", DeviceId("auto")),
])
def test_device_ids(text, expected):
    assert parse_device_id(text) == expected


@pytest.mark.parametrize("text", ["gpu", "-2", "*0", "1.5", ""])
def test_bad_device_ids(text):
    with pytest.raises(ConfigError, match="deviceId must be"):
        parse_device_id(text)


def test_bad_device_precision_and_trace_level_are_reported_with_their_path(tmp_path):
    base = "command=s\ns=[action=recordTest]\n"
    cfg = write(tmp_path / "a.cntk", base + "deviceId=gpu0\n")
    with pytest.raises(ConfigError, match="deviceId"):
        run([f"configFile={cfg}"])
    cfg = write(tmp_path / "b.cntk", base.replace("recordTest]", "recordTest; precision=half]"))
    with pytest.raises(ConfigError) as err:
        run([f"configFile={cfg}"])
    assert err.value.path == "s.precision" and "float or double" in str(err.value)
    cfg = write(tmp_path / "c.cntk", base + "traceLevel=high\n")
    with pytest.raises(ConfigError, match="traceLevel must be an integer"):
        run([f"configFile={cfg}"])
    assert CALLS == []


def test_stderr_writes_prefix_commands_log_creating_directories(tmp_path):
    prefix = tmp_path / "logs" / "deeper" / "cntk"
    cfg = write(tmp_path / "a.cntk", f"command=mnistTrain:mnistTest\nstderr={prefix}\ntraceLevel=1\n"
                "mnistTrain=[action=recordTest]\nmnistTest=[action=recordTest]\n")
    run([f"configFile={cfg}"])
    log = Path(str(prefix) + "_mnistTrain_mnistTest.log")
    assert log.exists()
    text = log.read_text()
    assert "recorded mnistTrain" in text and "recorded mnistTest" in text
    assert "stderr text from mnistTest" in text
    assert "info from" not in text        # traceLevel=1: warnings, no info
    # the file is overwritten by the next run
    run([f"configFile={cfg}", "traceLevel=2"])
    text2 = log.read_text()
    assert text2.count("recorded mnistTrain") == 1 and "info from mnistTrain" in text2


def test_stderr_log_path_rule():
    assert stderr_log_path("c:\\cntk\\log\\cntk", ["mnistTrain", "mnistTest"]) == \
        "c:\\cntk\\log\\cntk_mnistTrain_mnistTest.log"
    assert stderr_log_path("abc", ["mnistTrain"]) == "abc_mnistTrain.log"


# --- the command line -------------------------------------------------------------------------

def test_help_lists_actions_and_docs(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("dumpReader", "train", "eval", "test", "cv", "write", "createLabelMap", "dumpnode", "adapt"):
        assert f"  {name}" in out
    assert "docs/config.md" in out and "show-config" in out
    assert main([]) == 2


def test_show_config_prints_the_resolved_configuration(tmp_path, capsys):
    write(tmp_path / "inc.cntk", "Root=/data\n")
    cfg = write(tmp_path / "a.cntk", "include=inc.cntk\ncommand=s\ns=[action=recordTest; file=$Root$/x.txt]\n")
    assert main(["show-config", f"configFile={cfg}", "s=[tag=T]"]) == 0
    out = capsys.readouterr().out
    assert "/data/x.txt" in out and "$Root$" not in out
    assert "tag" in out and "T" in out
    assert CALLS == []
    from cntkio.config import parse_config
    reparsed = parse_config(out)
    assert reparsed("s")("file") == "/data/x.txt" and reparsed("s")("tag") == "T"


def test_errors_exit_1_with_the_message(tmp_path, capsys):
    cfg = write(tmp_path / "a.cntk", "command=s\ns=[action=nope]\n")
    assert main([f"configFile={cfg}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cntkio: error:") and "unknown action 'nope'" in err
    assert main([f"configFile={tmp_path / 'missing.cntk'}"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_a_bare_file_name_is_bad_usage(tmp_path, capsys):
    assert main(["x.cntk"]) == 2
    assert "configFile=x.cntk" in capsys.readouterr().err


def test_python_dash_m_and_exit_status(tmp_path):
    cfg = write(tmp_path / "a.cntk", "command=s\ns=[action=nope]\n")
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "cntkio", f"configFile={cfg}"], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 1 and "unknown action 'nope'" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "cntkio", "--help"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "dumpReader" in proc.stdout


def test_every_builtin_action_resolves_to_its_function():
    from cntkio.actions import BUILTIN_ACTIONS
    for name, target in BUILTIN_ACTIONS.items():
        fn = get_action(name)
        assert callable(fn), name
        assert fn.__name__ == target.rpartition(":")[2], name


def test_test_unroll_is_an_action_that_needs_its_model(tmp_path):
    from cntkio.errors import ConfigError
    cfg = write(tmp_path / "a.cntk", "command=e\ne=[action=testUnroll]\n")
    with pytest.raises(ConfigError, match="modelPath"):
        run([f"configFile={cfg}"])


def test_without_stderr_the_applications_logging_gets_the_records(tmp_path, caplog):
    cfg = write(tmp_path / "a.cntk", "command=s\ns=[action=recordTest]\ntraceLevel=2\n")
    with caplog.at_level(logging.INFO, logger="cntkio"):
        run([f"configFile={cfg}"])
    assert "recorded s" in caplog.text and "info from s" in caplog.text


def test_console_logging_when_nothing_is_configured(tmp_path):
    data = write(tmp_path / "d.txt", "|x 1\n|x 2\n")
    cfg = write(tmp_path / "b.cntk", f"""command=s
traceLevel=2
s=[action=dumpReader; minibatchSize=1; outputFile={tmp_path / 'o.txt'}
   reader=[readerType=CNTKTextFormatReader; file={data}; input=[x=[dim=1; format=dense]]]]
""")
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "cntkio", f"configFile={cfg}"], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "command s: action dumpReader" in proc.stderr
    assert (tmp_path / "o.txt").read_text().split() in (["1", "2"], ["2", "1"])
