"""Every configuration example of spec/configuration-files.txt, the reader sections of
spec/ctf-text-format-reader.txt and spec/composite-readers-deserializers-transforms.txt, and CNTK's
conformance configs parse to their documented meaning. The example texts are copied verbatim."""
from __future__ import annotations


import pytest

from cntkio.config import ConfigError, ConfigParameters, command_sections, load_config, parse_config
import paths

SHARED = paths.SHARED
CONFORMANCE = paths.CONFORMANCE / "Config"

SAMPLE = """\
# sample configuration file for CNTK 
command=mnistTrain:mnistTest

#global parameters, all commands use these values unless overridden at a higher level
precision=float
deviceId=auto

#commands used will be appended the stderr name to create a path 
stderr=c:\\cntk\\log\\cntk # \u201c_mnistTrain_mnistTest.log\u201d would be appended
traceLevel=0 # larger values mean more output
ndlMacros=C:\\cntk\\config\\DefaultMacros.ndl
modelPath=c:\\cntk\\model\\sample.dnn
labelMappingFile=c:\\cntk\\data\\mnist\\labels.map

mnistTrain=[
    action=train
    minibatchSize=32
    epochSize=60000

    NDLNetworkBuilder=[
        networkDescription=c:\\cntk\\config\\sample.ndl
        run=ndlMacroUse
    ]
    SGD=[
        #modelPath - moved to root level to share with mnistTest
        learningRatesPerMB=0.001
        maxEpochs=50
    ]
    reader=[
        readerType=UCIFastReader
        file=c:\\cntk\\data\\mnist\\mnist_train.txt
        features=[
            dim=784
            start=1        
        ]
        labels=[
            dim=1
            start=0
            labelDim=10
        ]
    ]
]

mnistTest=[
    action=eval
    maxEpochs=1
    epochSize=10000
    minibatchSize=1000    
    reader=[
        readerType=UCIFastReader
        randomize=None
        file=c:\\data\\mnist\\mnist_test.txt
        features=[
            dim=784
            start=1
        ]
        labels=[
            dim=1
            start=0
            labelDim=10
        ]
    ]
]
"""


# --- "Configuration Data" table --------------------------------------------------------------

def test_simple():
    assert parse_config("deviceId=auto")("deviceId") == "auto"


@pytest.mark.parametrize("text,expected", [
    ("minibatchSize=256:512:512:512:1024", ["256", "512", "512", "512", "1024"]),
    ("minibatchSize=256:512*3:1024", ["256", "512", "512", "512", "1024"]),
    ("files=(;c:\\data.txt;c:\\labels.txt)", ["c:\\data.txt", "c:\\labels.txt"]),
])
def test_array_rows(text, expected):
    cfg = parse_config(text)
    assert cfg(text.split("=")[0]).as_array().as_strs() == expected


def test_parameter_set_row():
    cfg = parse_config('section1=[id=1;size=256]\nsection2=[\n  subsection=[string="hi";num=5]\n'
                       '  value=1e-10\n  array=10:"this is a test":1.25\n]\n')
    assert cfg.to_dict() == {
        "section1": {"id": "1", "size": "256"},
        "section2": {"subsection": {"string": "hi", "num": "5"}, "value": "1e-10",
                     "array": ["10", "this is a test", "1.25"]},
    }
    assert cfg("section2")("value").as_float() == 1e-10
    assert cfg("section2")("subsection")("num").as_int() == 5


def test_repeated_values_example():
    assert (parse_config("params=[a=1;b=2;c=3]\nparams=[c=5;d=6;e=7]").to_dict()
            == parse_config("params=[a=1;b=2;c=5;d=6;e=7]").to_dict())


def test_comments_example():
    cfg = parse_config("#commands used will be appended the stderr name to create a path\n"
                       "stderr=c:\\cntk\\log\\cntk # \"_mnistTrain_mnistTest.log\" would be appended\n"
                       "# the parameter below is set to infinity, the # in 1#INF is not a comment marker\n"
                       "var = 1#INF\n")
    assert cfg.to_dict() == {"stderr": "c:\\cntk\\log\\cntk", "var": "1#INF"}
    assert cfg("var").as_float() == float("inf")


# --- the sample configuration ----------------------------------------------------------------

def test_sample_config_tree():
    cfg = parse_config(SAMPLE, file="sample.cntk")
    d = cfg.to_dict()
    assert d["command"] == "mnistTrain:mnistTest"
    assert d["stderr"] == "c:\\cntk\\log\\cntk"
    assert d["traceLevel"] == "0"
    assert d["mnistTrain"]["reader"] == {
        "readerType": "UCIFastReader", "file": "c:\\cntk\\data\\mnist\\mnist_train.txt",
        "features": {"dim": "784", "start": "1"}, "labels": {"dim": "1", "start": "0", "labelDim": "10"}}
    assert d["mnistTest"]["reader"]["randomize"] == "None"
    assert list(d["mnistTrain"]) == ["action", "minibatchSize", "epochSize", "NDLNetworkBuilder", "SGD", "reader"]


def test_sample_config_commands_and_actions():
    cmds = command_sections(parse_config(SAMPLE))
    assert [(c.name, c.actions) for c in cmds] == [("mnistTrain", ["train"]), ("mnistTest", ["eval"])]


def test_sample_config_parent_search():
    # spec: "The parameters at the top of the command section are actually SGD parameters ...
    # Configuration searches continue searching parents until the root"
    cfg = parse_config(SAMPLE)
    sgd = cfg("mnistTrain")("SGD")
    assert sgd("minibatchSize").as_int() == 32 and sgd("epochSize").as_int() == 60000
    assert sgd("modelPath") == "c:\\cntk\\model\\sample.dnn"  # moved to root level
    assert sgd("maxEpochs").as_int() == 50
    assert sgd("learningRatesPerMB").as_array().as_floats() == [0.001]
    test_reader = cfg("mnistTest")("reader")
    assert test_reader("labelMappingFile") == "c:\\cntk\\data\\mnist\\labels.map"
    assert test_reader("features")("file") == "c:\\data\\mnist\\mnist_test.txt"  # file moved up a level
    assert cfg("mnistTest")("reader")("labels")("labelDim").as_int() == 10
    assert cfg("precision") == "float" and cfg("mnistTest")("reader")("precision") == "float"


def test_sample_config_do_train_lookups():
    # the "Configuration Program Example": DoCommand / DoTrain lookups with defaults
    cfg = parse_config(SAMPLE)
    for c in command_sections(cfg):
        assert c.section("action", "train") in ("train", "eval")
    train = cfg("mnistTrain")
    sgd = train("SGD")
    assert sgd("learningRatesPerMB", "").as_array().as_floats() == [0.001]
    assert sgd("minibatchSize", "256").as_array().as_ints() == [32]
    assert sgd("epochSize", "0").as_int() == 60000
    assert sgd("traceLevel", "0").as_int() == 0
    assert isinstance(train("reader"), ConfigParameters) and isinstance(train("NDLNetworkBuilder"), ConfigParameters)
    assert cfg("mnistTest")("SGD", None) is None


def test_sample_config_misspelt_name():
    cfg = parse_config(SAMPLE, file="sample.cntk")
    with pytest.raises(ConfigError) as ei:
        cfg("mnistTrain")("reader")("fiel")
    e = ei.value
    assert e.path == "mnistTrain.reader.fiel" and e.file == "sample.cntk" and e.line == 29
    assert "did you mean 'file'?" in str(e)


def test_learning_rates_array():
    # spec: learningRatesPerMB 0.001*10:0.0005: "for the first 10 epochs 0.001 ... then 0.0005"
    arr = parse_config("learningRatesPerMB=0.001*10:0.0005")("learningRatesPerMB").as_array().as_floats()
    assert arr == [0.001] * 10 + [0.0005]


@pytest.mark.parametrize("value", ["auto", "cpu", "0", "all", "*2"])
def test_device_id_values(value):
    v = parse_config(f"deviceId={value}")("deviceId")
    assert v == value and v.as_array().as_strs() == [value]


def test_command_line_override_examples(tmp_path):
    (tmp_path / "config.txt").write_text(SAMPLE, encoding="utf-8")
    cfg = load_config(["configFile=config.txt", "stderr=c:\\temp\\newpath"], base_dir=str(tmp_path))
    assert cfg("stderr") == "c:\\temp\\newpath"
    cfg = load_config(["configFile=config.txt", "mnistTrain=[minibatchSize=256]"], base_dir=str(tmp_path))
    assert cfg("mnistTrain")("minibatchSize").as_int() == 256 and cfg("mnistTrain")("epochSize").as_int() == 60000
    cfg = load_config(["configFile=config.txt", "mnistTrain=[reader=[file=mynewfile.txt]]"], base_dir=str(tmp_path))
    assert cfg("mnistTrain")("reader")("file") == "mynewfile.txt"
    assert cfg("mnistTrain")("reader")("features")("dim").as_int() == 784


# --- "Configuration Formats" table of the programmer reference --------------------------------

def test_dictionary_forms():
    a = parse_config("parameter1=value1;\nparameter2=value2;\nboolparam")
    b = parse_config("d=[#parameter1=value1#parameter2=value2#boolparam]")("d")
    c = parse_config("d=[\nparameter1=value1\nparameter2=value2\nboolparam\n]")("d")
    expected = {"parameter1": "value1", "parameter2": "value2", "boolparam": "true"}
    assert a.to_dict() == b.to_dict() == c.to_dict() == expected


def test_array_forms():
    forms = ["value:value:value", "value:value*2", "{|value|value|value}", "{|value|value*2}",
             "{\nvalue\nvalue\nvalue*1\n}"]
    for form in forms:
        assert parse_config(f"a={form}")("a").as_array().as_strs() == ["value"] * 3, form
    # the table's "{|value|value*#|valve}"
    assert parse_config("a={|value|value*2|valve}")("a").as_array().as_strs() == ["value", "value", "value", "valve"]


def test_alternate_separator_parameter_set():
    cfg = parse_config("name=[|parameter1=value1|parameter2=value2|parameter3=value3]")
    assert cfg("name")("parameter3") == "value3"


def test_config_accessors():
    # value = config("name"); config("name", "defaultValue"); config.Exists("name"); Insert
    cfg = parse_config("name=5\nset=[a=1]")
    assert cfg("name").as_int() == 5
    assert cfg("other", "defaultValue") == "defaultValue"
    with pytest.raises(ConfigError):
        cfg("other")
    assert cfg.exists("name") and not cfg.exists("other")
    cfg.insert("name", "6")
    cfg.insert("set", "[b=2]")
    cfg.insert("new=7")
    assert cfg.to_dict() == {"name": "6", "set": {"a": "1", "b": "2"}, "new": "7"}


def test_config_array_example():
    arr = parse_config("array={|c:\\temp\\new.txt|12*3|1e-12}")("array").as_array()
    assert len(arr) == 5 and arr.as_strs() == ["c:\\temp\\new.txt", "12", "12", "12", "1e-12"]


# --- reader sections of configuration-files.txt ----------------------------------------------

BINARY_WRITER = """\
    # Parameter values for the reader with cache
    reader=[
      # reader to use
      readerType=UCIFastReader
      # if writerType is set, we will cache to a binary file
      # if the binary file exists, we will use it instead of parsing this file
      writerType=BinaryReader
      miniBatchMode=Partial
      randomize=Auto
      windowSize=10000

      #### write definition
      wfile=c:\\data\\mnist\\mnist_train.bin
      #wsize - inital size of the file in MB
      # if calculated size would be bigger, that is used instead
      wsize=256

      #wrecords - number of records we should allocate space for in the file
      # files cannot be expanded, so this should be large enough. 
      wrecords=60000

      features=[
        dim=784
        start=1        
        file=c:\\data\\mnist\\mnist_train.txt

        ### write definition
        #wsize=200
        #wfile=c:\\data\\mnist\\mnist_train_features.bin
        sectionType=data
      ]
      labels=[
        dim=1
        start=0
        file=c:\\data\\mnist\\mnist_train.txt
        labelMappingFile=c:\\temp\\labels.txt
        labelDim=10
        labelType=Category

        #### Write definition ####
        # sizeof(unsigned) which is the label index type
        #wsize=10
        #wfile=c:\\data\\mnist\\mnist_train_labels.bin
        elementSize=4
        wref=features
        sectionType=labels
        mapping=[
          #redefine number of records for this section, 
          #since we don't need to save it for each data record
          wrecords=10
          #variable size so use an average string size
          elementSize=10
          sectionType=labelMapping
        ]
        category=[
          dim=10
          #elementSize=sizeof(ElemType) is default
          sectionType=categoryLabels
        ]
      ]
    ]
]
"""


def test_binary_writer_example_is_a_fragment_of_a_section():
    # the page's example ends with the ']' of an enclosing command section
    with pytest.raises(ConfigError) as ei:
        parse_config(BINARY_WRITER, file="bw.cntk")
    assert ei.value.line == 62 and "unexpected ']'" in str(ei.value)
    cfg = parse_config("train=[\n" + BINARY_WRITER)
    reader = cfg("train")("reader")
    assert reader("writerType") == "BinaryReader" and reader("wsize").as_int() == 256
    labels = reader("labels")
    assert labels("mapping")("elementSize").as_int() == 10
    # "#elementSize=sizeof(ElemType) is default" is a comment: the value comes from labels
    assert not labels("category").exists_current("elementSize")
    assert labels("category")("elementSize").as_int() == 4
    assert labels("category")("wfile") == "c:\\data\\mnist\\mnist_train.bin"  # found in reader
    assert "wsize" not in reader("features")


# --- reader pages ----------------------------------------------------------------------------

CTF_EXAMPLE_1 = """\
reader = [
    readerType = "CNTKTextFormatReader"
    file = "c:\\mydata\\SampleInput.txt" # See the second example for Linux path example

    # IMPORTANT!
    # All inputs are grouped within "input" sub-section.
    input = [
        A = [
            dim = 5
            format = "dense"
        ]
        B = [
            dim = 1000000
            format = "sparse"
        ]
        C = [
            dim = 1
            format = "dense"
        ]
    ]
]
"""

CTF_EXAMPLE_2 = """\
precision="double"

reader = [
    readerType = "CNTKTextFormatReader"
    file = "/home/mydata/SampleInput.txt" # See the first example for Windows style path example
    randomize = true
    randomizationWindow = 30
    skipSequenceIds = false
    maxErrors = 100
    traceLevel = 2

    chunkSizeInBytes = 1024

    keepDataInMemory = true
    frameMode = false

    input = [
        Some_very_long_input_name = [
            alias = "a"
            dim = 3
            format = "dense"
        ]
        Some_other_also_very_long_input_name = [
            alias = "b"
            dim = 2
            format = "dense"
        ]
    ]
]
"""

CTF_COMPOSITE = """\
reader = {
        verbosity = 0 ;
        randomize = true;
        randomizationWindow=30
        deserializers = ({
            type = "CNTKTextFormatDeserializer" ; module = "CNTKTextFormatReader"
            file = "/home/mydata/SampleInput.txt" # See the first example for Windows style path example
            maxErrors = 100
            skipSequenceIds = false
            traceLevel = 2
            input = {
                qu1fea = {alias = "qui"; dim = 95589; format = "sparse"}
                qu2fea = {alias = "quj"; dim = 95589; format = "sparse"}
                pairweight = {alias = "wij"; dim = 1; format = "dense"}
            }
        })
    }
"""


def test_ctf_reader_example_1():
    r = parse_config(CTF_EXAMPLE_1)("reader")
    assert r("file") == "c:\\mydata\\SampleInput.txt"
    assert r("input").to_dict() == {"A": {"dim": "5", "format": "dense"}, "B": {"dim": "1000000", "format": "sparse"},
                                    "C": {"dim": "1", "format": "dense"}}


def test_ctf_reader_example_2():
    cfg = parse_config(CTF_EXAMPLE_2)
    r = cfg("reader")
    assert r("precision") == "double"
    assert r("randomize").as_bool() is True and r("randomizationWindow").as_int() == 30
    assert r("skipSequenceIds").as_bool() is False and r("maxErrors").as_int() == 100
    assert r("chunkSizeInBytes").as_int() == 1024 and r("keepDataInMemory").as_bool() is True
    assert r("input")("Some_very_long_input_name")("alias") == "a"


def test_ctf_composite_example():
    r = parse_config(CTF_COMPOSITE)("reader")
    assert r("verbosity").as_int() == 0 and r("randomizationWindow").as_int() == 30
    (d,) = r("deserializers").as_array()
    assert d("type") == "CNTKTextFormatDeserializer" and d("module") == "CNTKTextFormatReader"
    assert d("file") == "/home/mydata/SampleInput.txt"
    assert d("input").to_dict() == {"qu1fea": {"alias": "qui", "dim": "95589", "format": "sparse"},
                                    "qu2fea": {"alias": "quj", "dim": "95589", "format": "sparse"},
                                    "pairweight": {"alias": "wij", "dim": "1", "format": "dense"}}
    assert d("randomize").as_bool() is True  # inherited from the reader section


HTKMLF = """\
reader = [
    readerType = "HTKMLFReader"
    readMethod = "blockRandomize"
    nbruttsineachrecurrentiter = 32
    randomize = "auto"
    verbosity = 0

    features = [
        dim = 363
        type = "real"
        scpFile = "$DataDir$/glob_0000.scp"
    ]

    labels = [
        mlfFile = "$DataDir$/glob_0000.mlf"
        labelMappingFile = "$DataDir$/state.list"

        labelDim = 132
        labelType = "category"
    ]
]
"""

HTK_COMPOSITE = """\
reader = [
    verbosity = 0
    randomize = true

    # A list of deserializers the reader uses.
    deserializers = (
        [
            # Type of deserializer, in this case the one that reads
            # HTK feature files.
            type = "HTKFeatureDeserializer"
            # Module (.dll or .so) where this deserializer is implemented
            module = "HTKDeserializers"

            # Description of input streams the deserializer provides,
            # can be one or many, depending on a particular
            # deserializer implementation
            # For HTKFeatureDeserializer, just one stream can be described.
            input = [
                # Description of input stream to feed the Input node named "features"
                features = [
                    dim = 363
                    scpFile = "$DataDir$/glob_0000.scp"
                ]
            ]
        ]:
        [
            # Type of deserializer, in this case the one
            # that reads HTK label files.
            type = "HTKMLFDeserializer"
            module = "HTKDeserializers"

            # Description of input streams the deserializer provides,
            input = [
                # Description of input stream to feed the Input node named "labels"
                labels = [
                    dim = 132
                    mlfFile = "$DataDir$/glob_0000.mlf"
                    labelMappingFile = "$DataDir$/state.list"
                    # whether phone boundary information should be encoded
                    # set to true in CTC-type training
                    phoneBoundaries=false
                ]
            ]
        ]
    )
]
"""

IMAGE = """\
deserializers = ([
    type = "ImageDeserializer"
    module = "ImageReader"

    # Map file which maps images to labels
    file = "$ConfigDir$/train_map.txt"

    # Description of input streams
    input = [
            # Description of input stream to feed the Input node named "features"
            features = [
                transforms = (
                    [
                        type = "Crop"
                        # Possible values: Center, RandomSide, RandomArea, Multiview10. Default: Center
                        cropType = "RandomSide"
                        # Crop scale side ratio.
                        sideRatio = 0.875
                        # Crop scale ratio jitter type
                        jitterType = "UniRatio"
                    ]:[
                        type = "Scale"
                        width = 224
                        height = 224
                        channels = 3
                        # Interpolation to use when scaling image to width x height size.
                        interpolations = "linear"
                    ]:[
                        type = "Mean"
                        # Stores mean values for each pixel in OpenCV matrix XML format.
                        meanFile = "$ConfigDir$/ImageNet1K_mean.xml"
                    ]:[
                        # Changes the image layout from HWC to CHW
                        type = "Transpose"
                    ]
                )
            ]
            # Description of input stream to feed the Input node named "labels"
            labels = [
                labelDim = 1000
            ]
        ]
    ]
])
"""


def test_htkmlf_reader_example():
    cfg = parse_config("DataDir=/speech\n" + HTKMLF)
    r = cfg("reader")
    assert r("features")("scpFile") == "/speech/glob_0000.scp"
    assert r("labels")("labelMappingFile") == "/speech/state.list"
    assert r("nbruttsineachrecurrentiter").as_int() == 32


def test_htk_composite_example():
    cfg = parse_config("DataDir=/speech\n" + HTK_COMPOSITE)
    feats, labels = cfg("reader")("deserializers").as_array()
    assert feats("type") == "HTKFeatureDeserializer"
    assert feats("input")("features")("scpFile") == "/speech/glob_0000.scp"
    assert labels("input")("labels")("phoneBoundaries").as_bool() is False
    assert labels("input")("labels")("mlfFile") == "/speech/glob_0000.mlf"
    assert cfg.to_dict()["reader"]["deserializers"][1]["module"] == "HTKDeserializers"


def test_image_transforms_example_has_an_extra_bracket():
    # as printed on the page, the example closes one ']' too many; the error points at it
    with pytest.raises(ConfigError) as ei:
        parse_config("ConfigDir=/c\n" + IMAGE, file="image.cntk")
    assert ei.value.line == 45 and "expected ')' to close '(' opened on line 2, found ']'" in str(ei.value)
    fixed = IMAGE.replace("        ]\n    ]\n])", "        ]\n])")
    cfg = parse_config("ConfigDir=/c\n" + fixed)
    (d,) = cfg("deserializers").as_array()
    assert d("file") == "/c/train_map.txt"
    transforms = d("input")("features")("transforms").as_array()
    assert [t("type") for t in transforms] == ["Crop", "Scale", "Mean", "Transpose"]
    assert transforms[0]("sideRatio").as_float() == 0.875
    assert transforms[2]("meanFile") == "/c/ImageNet1K_mean.xml"
    assert d("input")("labels")("labelDim").as_int() == 1000


# --- CNTK's conformance configs --------------------------------------------------------------

@paths.needs_shared
@pytest.mark.parametrize("name", ["CNTKTextFormatReader/dense.cntk", "CNTKTextFormatReader/sparse.cntk",
                                  "CNTKTextFormatReader/edge_cases.cntk", "CNTKBinaryReader/test.cntk"])
def test_conformance_configs_load(name):
    cfg = load_config([f"configFile={CONFORMANCE / name}"])
    tree = cfg.to_dict()
    assert tree.get("deviceId", "-1") == "-1"
    sections = 0
    for section, value in tree.items():
        if isinstance(value, dict) and "reader" in value:
            reader = cfg(section)("reader")
            assert reader("readerType") in ("CNTKTextFormatReader", "CNTKBinaryReader")
            assert reader("precision") in ("float", "double")
            reader("file")
            sections += 1
    assert sections >= 4


@paths.needs_shared
def test_conformance_sparse_defmbsize_substitution():
    cfg = load_config([f"configFile={CONFORMANCE / 'CNTKTextFormatReader/sparse.cntk'}"])
    f = cfg("1x1")("reader")("input")("features")
    assert f("definesMbSize").as_bool() is False and f("alias") == "F0" and f("dim").as_int() == 10000
    cfg = load_config([f"configFile={CONFORMANCE / 'CNTKTextFormatReader/sparse.cntk'}", "defMbSize=true"])
    assert cfg("1x1.reader.input.features.definesMbSize").as_bool() is True


@paths.needs_shared
def test_conformance_dense_sections():
    cfg = load_config([f"configFile={CONFORMANCE / 'CNTKTextFormatReader/dense.cntk'}"])
    r = cfg("10x10")("reader")
    assert r("randomize").as_bool() is False and r("file") == "10x10_dense.txt"
    assert r("input")("features")("dim").as_int() == 5
