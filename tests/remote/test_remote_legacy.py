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


# --- UCIFastReader -------------------------------------------------------------------------------

def _uci_files(folder, n=300):
    rng = np.random.default_rng(3)
    labels = ["cat", "dog", "eel"]
    (folder / "data.txt").write_text("".join(f"{labels[int(rng.integers(0, 3))]} " +
                                             " ".join(f"{v:.3f}" for v in rng.random(4)) + "\n" for _ in range(n)))
    (folder / "labels.map").write_text("eel\ncat\ndog\n")


def _uci_config(base, remote="", extra=""):
    return f"""
    reader = [
        readerType = UCIFastReader
        file = "{base}data.txt"
        randomize = 50
        {remote}
        {extra}
        features = [ dim = 4 ; start = 1 ]
        labels = [ dim = 1 ; start = 0 ; labelDim = 3 ; labelMappingFile = "{base}labels.map" ]
    ]"""


def test_ucifastreader_data_and_label_map_in_a_bucket_equal_the_local_read(s3, bucket, tmp_path):
    _uci_files(tmp_path)
    for name in ("data.txt", "labels.map"):
        s3.upload(str(tmp_path / name), f"s3://{bucket}/uci/{name}")
    want = read_config(_uci_config(f"{tmp_path}/"))
    got = read_config(_uci_config(f"s3://{bucket}/uci/", storage_section(s3, tmp_path)))
    assert_same(got, want)
    assert len(list((tmp_path / "cache" / "files").iterdir())) == 2   # each copied once, by URL and ETag
    # a local binary cache (wfile) of a text at a URL: built on the first read, used on the second
    cached = _uci_config(f"s3://{bucket}/uci/", storage_section(s3, tmp_path),
                         f'writerType = BinaryReader ; wfile = "{tmp_path / "uci.bin"}"')
    assert_same(read_config(cached), want)
    assert_same(read_config(cached), want)
    # createLabelMap's labels of a data file at a URL (written to a local file)
    from cntkio.readers.legacy.ucifast import write_label_map
    def made(base, remote=""):
        reader = parse_config(textwrap.dedent(_uci_config(base, remote)))("reader")
        return write_label_map(reader, "labels", str(tmp_path / "made.map"))
    assert made(f"s3://{bucket}/uci/", storage_section(s3, tmp_path)) == made(f"{tmp_path}/")
    assert sorted((tmp_path / "made.map").read_text().split()) == ["cat", "dog", "eel"]


def test_ucifastreader_wrong_url_names_it_and_a_cache_at_a_url_is_refused(s3, bucket, tmp_path):
    _uci_files(tmp_path)
    s3.upload(str(tmp_path / "labels.map"), f"s3://{bucket}/uci/labels.map")
    with pytest.raises(ConfigError, match=f"s3://{bucket}/uci/data.txt"):
        read_config(_uci_config(f"s3://{bucket}/uci/", storage_section(s3, tmp_path)))
    s3.upload(str(tmp_path / "data.txt"), f"s3://{bucket}/uci/data.txt")
    with pytest.raises(ConfigError, match=f"binary cache file 's3://{bucket}/c.bin' is a URL") as err:
        read_config(_uci_config(f"s3://{bucket}/uci/", storage_section(s3, tmp_path),
                                f'writerType = BinaryReader ; wfile = "s3://{bucket}/c.bin"'))
    assert err.value.path.endswith("wfile")


# --- LMSequenceReader, LUSequenceReader ------------------------------------------------------------

def _read_section(section: dict):
    return minibatches(build_reader(section, max_sweeps=1), size=16)


def test_lmsequencereader_corpus_vocabulary_and_word_classes_in_a_bucket_equal_the_local_read(
        s3, bucket, remote_keys, tmp_path):
    rng = np.random.default_rng(5)
    words = ["the", "cat", "sat", "on", "mat", "a", "dog"]
    (tmp_path / "c.txt").write_text("".join(" ".join(rng.choice(words, int(rng.integers(2, 7)))) + " </s>\n"
                                            for _ in range(60)))
    (tmp_path / "words.txt").write_text("</s>\n" + "\n".join(words) + "\n")
    (tmp_path / "classes.txt").write_text("".join(f"{i}\t1\t{w}\t{min(i, 3) // 2}\n"
                                                  for i, w in enumerate(["</s>"] + words)))
    s3.upload(str(tmp_path), f"s3://{bucket}/lm")

    def section(base, vocab, keys=None):
        return {"readerType": "LMSequenceReader", "file": f"{base}c.txt", "randomize": "10", **vocab(base),
                "labelIn": {"labelDim": "8", "beginSequence": "</s>", "endSequence": "</s>"},
                "labels": {"labelType": "NextWord", "labelDim": "8"}, **(keys or {})}

    for vocab in (lambda b: {"wordclass": f"{b}classes.txt"}, lambda b: {}):
        want = _read_section(section(f"{tmp_path}/", vocab))
        assert_same(_read_section(section(f"s3://{bucket}/lm/", vocab, remote_keys)), want)
    with_map = section(f"s3://{bucket}/lm/", lambda b: {}, remote_keys)
    with_map["labelIn"]["labelMappingFile"] = f"s3://{bucket}/lm/words.txt"
    local = section(f"{tmp_path}/", lambda b: {})
    local["labelIn"]["labelMappingFile"] = f"{tmp_path}/words.txt"
    assert_same(_read_section(with_map), _read_section(local))
    with pytest.raises(ConfigError, match=f"s3://{bucket}/lm/nowhere.txt"):
        _read_section(section(f"s3://{bucket}/lm/", lambda b: {"wordclass": f"{b}nowhere.txt"}, remote_keys))


def test_lusequencereader_corpus_token_files_and_word_map_in_a_bucket_equal_the_local_read(
        s3, bucket, remote_keys, tmp_path):
    (tmp_path / "a.txt").write_text("BOS O\ni O\nwant O\nto O\nfly O\nfrom O\nboston B-city\nEOS O\n\n"
                                    "BOS O\nshow O\ncheap B-cost\nflights O\nEOS O\n" * 5)
    (tmp_path / "in.txt").write_text("BOS\nEOS\ni\nwant\nto\nfly\nfrom\nboston\nshow\nflights\n<unk>\n")
    (tmp_path / "out.txt").write_text("O\nB-city\nB-cost\n")
    (tmp_path / "map.txt").write_text("boston <unk>\nshow show\n")
    s3.upload(str(tmp_path), f"s3://{bucket}/lu")

    def section(base, keys=None):
        return {"readerType": "LUSequenceReader", "file": f"{base}a.txt", "randomize": "None", "unk": "<unk>",
                "wordContext": "0:1", "wordmap": f"{base}map.txt",
                "labelIn": {"token": f"{base}in.txt", "beginSequence": "BOS", "endSequence": "EOS",
                            "usewordmap": "true"},
                "labels": {"token": f"{base}out.txt"}, **(keys or {})}

    assert_same(_read_section(section(f"s3://{bucket}/lu/", remote_keys)), _read_section(section(f"{tmp_path}/")))
    wrong = section(f"s3://{bucket}/lu/", remote_keys)
    wrong["labels"]["token"] = f"s3://{bucket}/lu/missing.txt"
    with pytest.raises(ConfigError, match=f"token file 's3://{bucket}/lu/missing.txt' does not exist"):
        _read_section(wrong)


# --- BinaryReader ----------------------------------------------------------------------------------

def _binary_files(s3, bucket, tmp_path):
    """A BinaryReader file (features and category labels of the UCI data, written as UCIFastReader's
    binary cache) locally and in the bucket."""
    _uci_files(tmp_path)
    read_config(_uci_config(f"{tmp_path}/", extra=f'writerType = BinaryReader ; wfile = "{tmp_path / "m.bin"}"'))
    s3.upload(str(tmp_path / "m.bin"), f"s3://{bucket}/bin/m.bin")
    return str(tmp_path / "m.bin"), f"s3://{bucket}/bin/m.bin"


def test_binaryreader_file_in_a_bucket_is_read_by_ranged_gets_and_equals_the_local_read(
        s3, bucket, remote_keys, tmp_path):
    from cntkio.remote import open_object, remote_options
    local, url = _binary_files(s3, bucket, tmp_path)
    want = _read_section({"readerType": "BinaryReader", "file": local, "randomize": "30"})
    for file in (url, f"({url})"):       # one URL, and an array of one: the ':' of a URL splits no array
        got = _read_section({"readerType": "BinaryReader", "file": file, "randomize": "30", **remote_keys})
        assert_same(got, want)
    obj = open_object(url, remote_options(remote_keys))
    assert 0 < obj.fetched < 2 * obj.size     # ranges (each fetched once, the second sweep from the cache)
    assert not (tmp_path / "cache" / "files").exists()          # never copied whole
    with pytest.raises(ConfigError, match=f"s3://{bucket}/bin/nothing.bin"):
        _read_section({"readerType": "BinaryReader", "file": f"s3://{bucket}/bin/nothing.bin", **remote_keys})


def test_binaryreader_object_replaced_during_a_run_is_an_error_naming_it(s3, bucket, remote_keys, tmp_path):
    from cntkio.remote import ObjectChanged
    local, url = _binary_files(s3, bucket, tmp_path)
    src = build_reader({"readerType": "BinaryReader", "file": url, "randomize": "10", **remote_keys}, max_sweeps=1)
    assert src.next_minibatch(10)
    s3.upload(str(tmp_path / "data.txt"), url)          # another object at the URL
    with pytest.raises(ObjectChanged, match=url):
        while src.next_minibatch(10):
            pass


# --- ImageReader (the legacy section: one ImageDeserializer) --------------------------------------

def test_legacy_imagereader_section_with_its_map_in_a_bucket_equals_the_local_read(s3, bucket, tmp_path):
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(1)
    for i in range(6):
        cv2.imwrite(str(tmp_path / f"im{i}.png"), rng.integers(0, 256, (5 + i, 6, 3), dtype=np.uint8))
    (tmp_path / "map.txt").write_text("".join(f"im{i}.png\t{i % 4}\n" for i in range(6)))
    s3.upload(str(tmp_path), f"s3://{bucket}/img")

    def section(base, remote=""):
        return f"""
        reader = [
            readerType = "ImageReader"
            file = "{base}map.txt"
            randomize = "none"
            {remote}
            features = [ width = 4 ; height = 4 ; channels = 3 ; cropType = Center ; interpolations = linear ]
            labels = [ labelDim = 4 ]
        ]"""
    want = read_config(section(f"{tmp_path}/"))
    assert_same(read_config(section(f"s3://{bucket}/img/", storage_section(s3, tmp_path))), want)


# --- files cntkio writes: never at a URL ---------------------------------------------------------

def test_writers_and_created_maps_at_a_url_are_refused_by_name(s3, bucket, tmp_path, capsys):
    from cntkio.actions.checks import check_writable
    from cntkio.legacy import DataWriter
    from cntkio.readers.legacy.urls import URLNotWritable
    with pytest.raises(URLNotWritable, match="writer output file 's3://b/out.bin' is a URL") as err:
        DataWriter({"writerType": "BinaryReader",
                    "features": {"dim": "3", "sectionType": "data", "wfile": "s3://b/out.bin"}})
    assert err.value.path.endswith("features.wfile")
    _uci_files(tmp_path)
    made = _uci_config(f"{tmp_path}/", storage_section(s3, tmp_path)).replace(
        f'labelMappingFile = "{tmp_path}/labels.map"',
        f'labelMappingFile = "s3://{bucket}/new.map" ; allowMapCreation = true')
    with pytest.raises(ConfigError, match=f"labelMappingFile: label mapping file 's3://{bucket}/new.map' is a URL"):
        read_config(made)    # the map is missing: CNTK would write it, cntkio will not write to a store
    assert "is a URL" in check_writable("gs://b/model.dnn") and check_writable(str(tmp_path / "m.dnn")) is None
    (tmp_path / "c.cntk").write_text(f"""
        command = makeMap
        labelMappingFile = "s3://{bucket}/labels.map"
        train = [ {_uci_config(f"{tmp_path}/").replace(f'labelMappingFile = "{tmp_path}/labels.map"', "")} ]
        makeMap = [ action = createLabelMap ; section = train ]""")
    assert main([f"configFile={tmp_path / 'c.cntk'}"]) != 0
    assert f"labelMappingFile: label mapping file 's3://{bucket}/labels.map' is a URL" in capsys.readouterr().err
