"""CNTK's legacy readers (readers/legacy/) reading their files from a bucket of a real S3 server
(moto) give what the same files give locally: HTKMLFReader (SCP, archives, MLF, state list, an
mlfFileList) run through ``cntkio configFile=...``, UCIFastReader (data and label mapping),
LMSequenceReader and LUSequenceReader (corpora, vocabularies, word classes), BinaryReader (ranged
reads); a wrong URL is an error naming it, and files cntkio would write at a URL are refused by name."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from test_remote_formats import _htk_corpus, assert_same, minibatches

from cntkio.cli import main
from cntkio.config import parse_config
from cntkio.errors import ConfigError
from cntkio.readers import build_reader


def storage_section(s3, tmp_path) -> str:
    """The config text of the test server's storageOptions and a chunk cache under tmp_path."""
    return (f'cacheDir = "{tmp_path / "cache"}"\n'
            f'storageOptions = [ key = "{s3.key}" ; secret = "{s3.secret}"\n'
            f'    client_kwargs = [ endpoint_url = "{s3.endpoint}" ; region_name = "us-east-1" ] ]\n')


def read_config(text: str, **kw):
    """Every minibatch of the reader section of ``text`` (one sweep, 16 samples each)."""
    return minibatches(build_reader(parse_config(textwrap.dedent(text))("reader"), max_sweeps=1, **kw), size=16)


# --- HTKMLFReader --------------------------------------------------------------------------------

def _htkmlf_config(tmp_path, out, base, remote="", labels=None):
    labels = labels or f'mlfFile = "{base}l.mlf"'
    cfg = tmp_path / f"{out.stem}.cntk"
    cfg.write_text(textwrap.dedent(f"""
        command = dump
        precision = float
        dump = [
            action = dumpReader
            outputFile = "{out}"
            minibatchSize = 8
            reader = [
                readerType = HTKMLFReader
                readMethod = blockRandomize
                randomize = auto
                frameMode = false
        """) + textwrap.indent(remote, " " * 16) + textwrap.dedent(f"""
                features = [ dim = 2 ; type = real ; scpFile = "{base}f.scp" ]
                labels = [ {labels} ; labelMappingFile = "{base}states.list" ; labelDim = 3 ]
            ]
        ]
        """))
    return cfg


def test_htkmlfreader_config_with_scp_and_mlf_in_a_bucket_dumps_what_the_local_files_dump(
        s3, bucket, tmp_path, monkeypatch):
    data = tmp_path / "htk"
    data.mkdir()
    _htk_corpus(data)
    (data / "mlfs.txt").write_text("l.mlf\n")    # an mlfFileList: its paths from its own folder
    s3.upload(str(data), f"s3://{bucket}/htk")
    monkeypatch.chdir(data)         # the local SCP's relative paths: from the working directory
    base = f"s3://{bucket}/htk/"
    want = tmp_path / "local.txt"
    assert main([f"configFile={_htkmlf_config(tmp_path, want, '')}"]) == 0
    for name, labels in (("url", None), ("list", f'mlfFileList = "{base}mlfs.txt"')):
        got = tmp_path / f"{name}.txt"
        cfg = _htkmlf_config(tmp_path, got, base, storage_section(s3, tmp_path), labels)
        assert main([f"configFile={cfg}"]) == 0
        assert got.read_text() == want.read_text() and len(want.read_text().split()) > 40


def test_htkmlfreader_with_a_wrong_url_names_it(s3, bucket, tmp_path):
    data = tmp_path / "htk"
    data.mkdir()
    _htk_corpus(data)
    s3.upload(str(data), f"s3://{bucket}/htk")
    base = f"s3://{bucket}/htk/"
    text = f"""
    reader = [
        readerType = HTKMLFReader
        {storage_section(s3, tmp_path)}
        features = [ dim = 2 ; scpFile = "{base}f.scp" ]
        labels = [ mlfFile = "{base}missing.mlf" ; labelMappingFile = "{base}states.list" ; labelDim = 3 ]
    ]"""
    with pytest.raises(FileNotFoundError, match=f"s3://{bucket}/htk/missing.mlf"):
        read_config(text)
