"""The text parsers the fuzz harness drives (tests/fuzz/text_fuzz.py), each with its seed inputs.

A target takes the input's bytes written to a file in a work folder and parses it through the
public entry point the readers and actions use; the harness checks the error rule around it.
Seeds come from cntkio's own writers where cntkio writes the format (binary MLF, SCP and HTK
archives, the legacy binary cache, config text through the config printer), else from the
repository's examples and small hand-made files; the harness mutates them.
"""
from __future__ import annotations

import os
import pathlib
import struct
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_SEED = 64 << 10                  # seeds are cut to 64 KiB: many short inputs over a few long ones


@dataclass
class Target:
    name: str
    run: Callable[[str], object]                  # parses the file at this path
    seeds: Callable[[str], list[bytes]]           # seed inputs (may write helper files into the folder)
    suffix: str = ".txt"
    #: tokens the mutator splices in (the format's keywords, separators and edge numbers)
    tokens: list[bytes] = field(default_factory=list)


NUMBERS = [b"0", b"-1", b"1e999", b"-1e999", b"nan", b"inf", b"4294967296", b"18446744073709551616",
           b"9" * 40, b"0x10", b"1.5", b"1e-400", b"2147483648", b"65536"]


def _files(*globs: str) -> list[bytes]:
    out = []
    for g in globs:
        for p in sorted(ROOT.glob(g)):
            out.append(p.read_bytes()[:MAX_SEED])
    return out


# --- config language --------------------------------------------------------------------------

def _config_run(path: str):
    from cntkio.config.loader import command_sections, load_config_file
    cfg = load_config_file(path)
    command_sections(cfg)
    return cfg


def _config_seeds(work: str) -> list[bytes]:
    from cntkio.config.loader import parse_config
    from cntkio.config.printer import dump
    seeds = _files("examples/*/*.cntk", "tests/data/brainscript/*.cntk")
    # the config printer's text of each example (cntkio's writer of the language)
    for s in list(seeds[:6]):
        try:
            seeds.append(dump(parse_config(s.decode("utf-8"), base_dir=work)).encode("utf-8"))
        except Exception:       # an example that includes files not in the work folder
            pass
    seeds.append(b'command = a:b\na = [ action = "train"; x = $y$ ]\nb = [ x = (1:2:3) ; y = "s" ]\ny = 7\n'
                 b'z = { p = [ q = 1 ] }\n#c\nw = %1\n')
    return seeds


CONFIG_TOKENS = [b"[", b"]", b"{", b"}", b"(", b")", b"=", b":", b";", b"$", b"$$", b"\"", b"'", b"#", b"\n",
                 b"include", b"command", b"precision", b"BrainScriptNetworkBuilder", b"...", b"\\", b"%"]


# --- NDL, BrainScript, MEL ----------------------------------------------------------------------

def _ndl_run(path: str):
    from cntkio.networks.ndl.builder import build_graph
    return build_graph(path)


def _bs_run(path: str):
    from cntkio.networks.brainscript import build_graph
    return build_graph(path)


def _mel_run(path: str):
    from cntkio.networks.mel import run_mel
    return run_mel(path)


NDL_SEED = b"""features = Input(4, tag=feature)
labels = Input(3, tag=label)
W0 = Parameter(5, 4, init=uniform)
B0 = Parameter(5, 1)
H1 = Sigmoid(Plus(Times(W0, features), B0))
W1 = Parameter(3, 5)
z = Times(W1, H1, tag=output)
ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)
err = ErrorPrediction(labels, z, tag=eval)
DNNLayer(inDim, outDim, x) = [ W = Parameter(outDim, inDim); b = Parameter(outDim); t = Times(W, x); z = Plus(t, b) ]
L2 = DNNLayer(5, 5, H1)
"""

BS_SEEDS = [
    b"features = Input {4}\nlabels = Input {3}\nW = ParameterTensor {(3:4)}\nb = ParameterTensor {3}\n"
    b"z = W * features + b\nce = CrossEntropyWithSoftmax (labels, z)\nerrs = ClassificationError (labels, z)\n"
    b"featureNodes = (features)\nlabelNodes = (labels)\ncriterionNodes = (ce)\nevaluationNodes = (errs)\n"
    b"outputNodes = (z)\n",
    b"x = Input {(2:3)}\nf(a, b=2) = a .* b\ny = f(x) + Constant(1)\nc = if 1 < 2 then y else x\n"
    b"r = [ p = 1 ; q = p + 1 ]\narr = array[1..3] (i => i * r.q)\nz = Sigmoid(c) > 0.5\n",
    b"model = Sequential (DenseLayer {5, activation=ReLU} : DenseLayer {3})\nx = Input {4}\nz = model(x)\n"
    b"h = RecurrentLSTMLayer {6} (x)\nemb = EmbeddingLayer {7} (x)\n",
]
BS_TOKENS = [b"{", b"}", b"(", b")", b"[", b"]", b"=", b":", b"..", b"=>", b"if", b"then", b"else", b"new", b"with",
             b"Input", b"Times", b"ParameterTensor", b"Constant", b"Sequential", b"array", b"*", b".*", b">", b"<=",
             b"&&", b"||", b"!", b"\"", b"'", b"#", b"//", b"/*", b"*/", b"include", b"BS.", b"\n"]

MEL_SEED = b"""m = CreateModel()
SetDefaultModel(m)
CopyNode(L1.*, L2.*, copy=all)
SetInput(L2.t, 1, L1.z)
SetNodeInput(OL.t, 1, L2.z)
Rename(L2.*, L3.*)
DeleteNode(L3.*)
SetProperty(L1.z, needsGradient, false)
Dump(m, "dump.txt")
"""
MEL_TOKENS = [b"CreateModel", b"LoadModel", b"SaveModel", b"SetDefaultModel", b"CopyNode", b"CopySubTree",
              b"SetInput", b"SetNodeInput", b"DeleteNode", b"Rename", b"SetProperty", b"Dump", b"DumpNode",
              b"UnloadModel", b".*", b"*", b"(", b")", b",", b"=", b"\"", b"\n", b"[", b"]"]


# --- HTK: SCP, MLF text and binary --------------------------------------------------------------

def _scp_run(path: str):
    from cntkio.deserializers.htk.scp import parse_scp_files
    parse_scp_files([path], None, numeric=False)
    return parse_scp_files([path], "/data", numeric=True) if os.path.getsize(path) < 4096 else None


def _scp_seeds(work: str) -> list[bytes]:
    from cntkio.deserializers.htk.writer import write_htk
    write_htk(os.path.join(work, "a.htk"), np.arange(40, dtype=np.float32).reshape(10, 4))
    lines = ["u0=a.htk[0,3]", "spk/u1.mfc=a.htk[4,9]", "a.htk", "u2.x=a.htk[2,2]", "7=a.htk[0,0]"]
    return [("\n".join(lines) + "\n").encode(), b"\xef\xbb\xbfu0=a.htk\r\n\r\n u1 = a.htk [ 1 , 2 ] \n",
            *_files("examples/speech/data/*.scp")]


SCP_TOKENS = [b"=", b"[", b"]", b",", b"\n", b"\r\n", b" ", b"\t", b".htk", b"../", b"/", b"\\"] + NUMBERS

STATES = ["s0", "s1", "s2", "s3", "s4", "s5"]


def _states(work: str) -> dict:
    return {s: i for i, s in enumerate(STATES)}


def _mlf_run(path: str):
    from cntkio.deserializers.htk.mlf import parse_mlf_files
    a = parse_mlf_files([path], {s: i for i, s in enumerate(STATES)}, 5, vectorized=True)
    b = parse_mlf_files([path], {s: i for i, s in enumerate(STATES)}, 5, vectorized=False)
    if a.names != b.names or not np.array_equal(a.seg_ends, b.seg_ends):
        raise AssertionError("the vectorized MLF scan and the line parser disagree")
    return a


def _mlf_seeds(work: str) -> list[bytes]:
    text = ['#!MLF!#']
    for u in range(3):
        text += [f'"*/spk{u}/u{u}.lab"', "0 200000 s0 -1.5", "200000 500000 s1", f"500000 {600000 + u * 100000} s2", "."]
    return [("\n".join(text) + "\n").encode(), b'#!MLF!#\r\n"u0.rec"\r\n0 1 s3\r\n.\r\nu9\n0 5 s1\n.\n',
            *_files("examples/speech/data/*.mlf")]


MLF_TOKENS = [b"#!MLF!#", b"\"*/", b".lab\"", b"\n.\n", b" ", b"\t", b"\r\n", b"s0", b"s5", b"\"", b"."] + NUMBERS


def _mlfbin_run(path: str):
    from cntkio.deserializers.htk.mlfbin import parse_binary_mlf_files
    return parse_binary_mlf_files([path], 6)


def _mlfbin_seeds(work: str) -> list[bytes]:
    from cntkio.deserializers.htk.mlfbin import write_binary_mlf
    out = []
    for version, keys in ((2, ["u0", "spk1/u1", "u2"]), (1, ["0", "17", "4294967295"])):
        p = os.path.join(work, f"seed{version}.bin")
        write_binary_mlf(p, [(k, [(i % 6, 3), ((i + 1) % 6, 2)]) for i, k in enumerate(keys)], version=version)
        out.append(pathlib.Path(p).read_bytes())
        os.unlink(p)
    return out


MLFBIN_TOKENS = [b"MLF", struct.pack("<h", 1), struct.pack("<h", 2), b"\xff\xff", b"\xff\xff\xff\xff", b"\x00\x01",
                 struct.pack("<H", 256), struct.pack("<H", 257), b"\x00\x00"]


# --- image and Base64 map files ----------------------------------------------------------------

def _imagemap_run(path: str):
    from cntkio.deserializers.image.mapfile import parse_image_map
    return parse_image_map(path, 10)


def _imagemap_seeds(work: str) -> list[bytes]:
    return [b"a.png\t0\nb.jpg\t3\nc/d.png\t9\t\n", b"0\ta.png\t1\r\n7\tz.zip@/x/y.png\t2\n",
            *_files("examples/images/*_map.txt")]


def _b64_run(path: str):
    from cntkio.deserializers.image.mapfile import index_base64_map
    return index_base64_map(path, 10, 256)


def _b64_seeds(work: str) -> list[bytes]:
    import base64
    png = base64.b64encode(bytes(range(48)))
    return [b"0\t" + png + b"\n3\t" + png + b"\n", b"5\t1\t" + png + b"\r\n9\t2\t" + png + b"\n7\t1\t" + png]


MAP_TOKENS = [b"\t", b"\n", b"\r\n", b"@", b".zip", b"/", b"=", b"+", b"\xff", b"\xc3\xa9", b" "] + NUMBERS


# --- UCI text and the legacy binary cache -------------------------------------------------------

UCI_STREAMS = {"features": {"dim": 4, "start": 1}, "labels": {"dim": 1, "start": 0, "labelDim": 10}}


def _uci_run(path: str):
    from cntkio.readers.legacy.ucifast import UCIFastDeserializer
    d = UCIFastDeserializer({"file": path, "streams": UCI_STREAMS, "chunkSizeInBytes": 200}, trace_level=0)
    try:
        for c in d.chunk_infos():
            d.get_chunk(c.id)
    finally:
        d.close()


def _uci_seeds(work: str) -> list[bytes]:
    rows = [f"{i % 10} {i * 0.5} {-i} {i}e-3 0.25" for i in range(12)]
    return [("\n".join(rows) + "\n").encode(), b"3 1 2 3 4\r\n\r\n9 0 0 0 0\n1 1.5e2 -0 .5 7",
            *[s[:4096] for s in _files("examples/legacy/digits_test.txt")]]


UCI_TOKENS = [b" ", b"\t", b"\n", b"\r\n", b",", b"-", b"e", b".", b"+"] + NUMBERS


def _cache_run(path: str):
    from cntkio.readers.legacy.binary import BinaryFile
    bf = BinaryFile(path)
    try:
        for s in bf.header["sections"]:
            a = bf.array(s)
            if len(a):
                out = np.empty_like(a[:1])
                bf.read_rows(s, 0, 1, out)
            bf.stats(s)
        bf.invalid()
    finally:
        bf.close()


def _cache_seeds(work: str) -> list[bytes]:
    from cntkio.readers.legacy.ucifast import UCIFastDeserializer
    text = os.path.join(work, "seed_uci.txt")
    with open(text, "w") as f:
        f.write("".join(f"{i % 10} {i} {i + 1} {i + 2} {i + 3}\n" for i in range(9)) + "x 1 2\n")
    cache = os.path.join(work, "seed_cache.bin")
    d = UCIFastDeserializer({"file": text, "streams": UCI_STREAMS,
                             "cache": {"files": {"features": cache, "labels": cache}}}, trace_level=0)
    d.close()
    data = pathlib.Path(cache).read_bytes()
    os.unlink(cache)
    return [data]


CACHE_TOKENS = [b"CNTKIOBW", b'"shape"', b'"dtype"', b'"<f4"', b'"|O"', b'"offset"', b"[]", b"{}", b"null",
                b"-1", b"1e999", b"18446744073709551615", struct.pack("<Q", 1 << 62), struct.pack("<I", 2)]


TARGETS: dict[str, Target] = {t.name: t for t in [
    Target("config", _config_run, _config_seeds, ".cntk", CONFIG_TOKENS + NUMBERS),
    Target("ndl", _ndl_run, lambda w: [NDL_SEED, *_files("examples/*/*.ndl")], ".ndl", BS_TOKENS + NUMBERS),
    Target("brainscript", _bs_run, lambda w: [*BS_SEEDS, *_files("examples/brainscript/*.bs")], ".bs",
           BS_TOKENS + NUMBERS),
    Target("mel", _mel_run, lambda w: [MEL_SEED, *_files("examples/ndl/*.mel")], ".mel", MEL_TOKENS + NUMBERS),
    Target("scp", _scp_run, _scp_seeds, ".scp", SCP_TOKENS),
    Target("mlf", _mlf_run, _mlf_seeds, ".mlf", MLF_TOKENS),
    Target("mlfbin", _mlfbin_run, _mlfbin_seeds, ".bin", MLFBIN_TOKENS),
    Target("imagemap", _imagemap_run, _imagemap_seeds, ".txt", MAP_TOKENS),
    Target("base64map", _b64_run, _b64_seeds, ".txt", MAP_TOKENS),
    Target("uci", _uci_run, _uci_seeds, ".txt", UCI_TOKENS),
    Target("cache", _cache_run, _cache_seeds, ".bin", CACHE_TOKENS),
]}
