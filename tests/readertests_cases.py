"""The cases of CNTK's reader unit tests, one row per call of its test helpers (:mod:`readertests`).

Each row copies the arguments of one ``HelperRunReaderTest`` (or ``BOOST_REQUIRE_EXCEPTION``, ...)
call in CNTK's C++ sources, at ``Tests/UnitTests/ReaderTests/`` of
github.com/microsoft/CNTK (read here from the April 2019 mirror, ROCmSoftwarePlatform/CNTK-1 @ 2504d8d4):
``ImageReaderTests.cpp``, ``HTKLMFReaderTests.cpp``, ``CNTKTextFormatReaderTests.cpp``,
``CNTKBinaryReaderTests.cpp``; ``UCIFastReaderTests.cpp`` from microsoft/CNTK @ 86ec025f^ (deleted by
86ec025f). A C++ case that calls its test lambda twice (``test({})``, ``test({L"defMBSize=true"})``)
is two rows. The parser-level CTF cases (``invalid_inputs``, ``no_trailing_newline_*``,
``extra_input_should_be_ignored``) build a TextParser, not a reader: they are in
``tests/conformance/test_conformance_parser.py``.

``UNAVAILABLE`` lists the cases that cannot run anywhere, with the reason (their data or control was
never published: the blob is absent from every mirror of CNTK's repository).
"""
from __future__ import annotations

from readertests import Case

__all__ = ["CASES", "UNAVAILABLE", "by_name"]

IMG = "ImageReaderTests.cpp"
HTK = "HTKLMFReaderTests.cpp"
CTF = "CNTKTextFormatReaderTests.cpp"
CBF = "CNTKBinaryReaderTests.cpp"
UCI = "UCIFastReaderTests.cpp (microsoft/CNTK @ 86ec025f^)"


def _img(name, config, section, control, e, mb, ep, nf, nl, subset=0, subsets=1, sf=False, sl=False,
         shared=True, params=(), cpp=None, **kw):
    return Case(name, "images", f"{IMG} {cpp or name}", "Data", f"Config/{config}", section,
                f"Control/{control}" if control else "", e, mb, ep, nf, nl, subset, subsets, sf, sl, shared,
                tuple(params), **kw)


_B64 = ('MapFile="$RootDir$/Base64ImageReaderSimple_map.txt"', 'DeserializerType="Base64ImageDeserializer"',
        "useNumericSequenceKeys=true")

IMAGE_CASES = [
    _img("ImageReaderSimple", "ImageReaderSimple_Config.cntk", "Simple_Test", "ImageReaderSimple_Control.txt",
         4, 4, 1, 1, 0),
    _img("ImageAndTextReaderSimple", "ImageAndTextReaderSimple_Config.cntk", "Simple_Test",
         "ImageAndTextReaderSimple_Control.txt", 4, 4, 1, 1, 0),
    _img("ImageSimpleCompositeAndBase64_Image", "ImageReaderSimple_Config.cntk", "Composite_Test",
         "ImageSimpleCompositeAndBase64_Control.txt", 4, 4, 1, 1, 1, sl=True, cpp="ImageSimpleCompositeAndBase64"),
    _img("ImageSimpleCompositeAndBase64_Base64", "ImageReaderSimple_Config.cntk", "Composite_Test",
         "ImageSimpleCompositeAndBase64_Control.txt", 4, 4, 1, 1, 1, sl=True, params=_B64,
         cpp="ImageSimpleCompositeAndBase64"),
    # the control does not exist (it reads as empty): every image of the map is invalid, within maxErrors
    _img("InvalidImageSimpleCompositeAndBase64", "ImageReaderSimple_Config.cntk", "Composite_Test",
         "InvalidImageSimpleCompositeAndBase64_Control.txt", 4, 4, 1, 1, 1,
         params=('MapFile="$RootDir$/InvalidBase64ImageReaderSimple_map.txt"',
                 'DeserializerType="Base64ImageDeserializer"', "maxErrors=4", "useNumericSequenceKeys=true")),
    _img("Base64WithWriteIds_StringIds", "ImageReaderSimple_Config.cntk", "Composite_Test", "", 8, 2, 1, 1, 1,
         params=('MapFile="$RootDir$/Base64WithStringIds_map.txt"', 'DeserializerType="Base64ImageDeserializer"',
                 "useNumericSequenceKeys=false"), mode="keys", cpp="Base64WithWriteIds",
         keys=("image0", "image0", "image1", "image1", "image2", "image2", "image3", "image3")),
    _img("Base64WithWriteIds_StringIds_truncated", "ImageReaderSimple_Config.cntk", "Composite_Test", "", 8, 2,
         1, 1, 1, params=('MapFile="$RootDir$/Base64WithStringIds_map.txt"',
                          'DeserializerType="Base64ImageDeserializer"', "useNumericSequenceKeys=false",
                          "truncationLength=1"), mode="keys", cpp="Base64WithWriteIds",
         keys=("image0", "image0", "image1", "image1", "image2", "image2", "image3", "image3")),
    _img("Base64WithWriteIds_NumericIds", "ImageReaderSimple_Config.cntk", "Composite_Test", "", 8, 2, 1, 1, 1,
         params=_B64, mode="keys", cpp="Base64WithWriteIds", keys=("0", "0", "1", "1", "2", "2", "3", "3")),
    _img("Base64WithWriteIds_NumericIds_truncated", "ImageReaderSimple_Config.cntk", "Composite_Test", "", 8, 2,
         1, 1, 1, params=(*_B64, "truncationLength=1"), mode="keys", cpp="Base64WithWriteIds",
         keys=("0", "0", "1", "1", "2", "2", "3", "3")),
    _img("ImageAndImageReaderSimple", "ImageDeserializers.cntk", "ImageAndImageReaderSimple_Test",
         "ImageAndImageReaderSimple_Control.txt", 4, 4, 1, 2, 2, shared=True,
         params=('MapFile="$RootDir$/ImageReaderSimple_map.txt"',
                 'SecondMapFile="$RootDir$/ImageReaderSimple_map.txt"')),
    _img("ImageReaderBadMap", "ImageReaderBadMap_Config.cntk", "Simple_Test", "", 4, 4, 1, 1, 0, mode="error",
         error="Invalid map file format, must contain 2 or 3 tab-delimited columns, line 2 in file "
               "./ImageReaderBadMap_map.txt.",
         names=("Invalid map file format, must contain 2 or 3 tab-delimited columns, line 2 in file "
                "./ImageReaderBadMap_map.txt.",)),
    _img("ImageAndImageTwoStreamsSameName", "ImageDeserializers.cntk", "TwoStreamsSameName", "", 4, 4, 1, 2, 2,
         params=('MapFile="$RootDir$/ImageReaderSimple_map.txt"',), mode="error",
         error="Two streams with the same name 'feature' have been found. Please rename the duplicate.",
         names=("Two streams with the same name 'feature' have been found", "ImageReaderSimple_map.txt")),
    _img("ImageReaderBadLabel", "ImageReaderBadLabel_Config.cntk", "Simple_Test", "", 4, 4, 1, 1, 0, mode="error",
         error="Cannot parse label value on line 1, second column, in file ./ImageReaderBadLabel_map.txt.",
         names=("Cannot parse label value on line 1, second column, in file ./ImageReaderBadLabel_map.txt.",)),
    _img("ImageReaderLabelOutOfRange", "ImageReaderLabelOutOfRange_Config.cntk", "Simple_Test", "", 4, 4, 1, 1, 0,
         mode="error",
         error="Image 'images/red.jpg' has invalid class id '10'. It is exceeding the label dimension of '4'. "
               "Line 3 in file ./ImageReaderLabelOutOfRange_map.txt.",
         names=("Image 'images/red.jpg' has invalid class id '10'. It is exceeding the label dimension of '4'. "
                "Line 3 in file ./ImageReaderLabelOutOfRange_map.txt.",)),
    _img("ImageReaderZip", "ImageReaderZip_Config.cntk", "Zip_Test", "ImageReaderZip_Control.txt", 4, 4, 1, 1, 0),
    _img("ImageReaderZipDuplicate", "ImageDeserializers.cntk", "SimpleZip", "ImageReaderZipDuplicate_Control.txt",
         4, 4, 1, 1, 0, params=('MapFile="$RootDir$/ImageReaderZipDuplicate_map.txt"',)),
    _img("ImageReaderZipMissingFile", "ImageReaderZipMissing_Config.cntk", "ZipMissing_Test", "", 4, 4, 1, 1, 0,
         mode="error",
         error="Cannot retrieve image data for some sequences. For more detail, please see the log file.",
         names=("Cannot retrieve image data", "missing.jpg", "simple.zip", "ImageReaderZipMissing_map.txt")),
    _img("ImageReaderMultiView", "ImageReaderMultiView_Config.cntk", "MultiView_Test",
         "ImageReaderMultiView_Control.txt", 10, 10, 1, 1, 0),
    _img("ImageReaderIntensityTransform", "ImageReaderIntensityTransform_Config.cntk", "IntensityTransform_Test",
         "ImageReaderIntensityTransform_Control.txt", 1, 1, 2, 1, 0),
    _img("ImageReaderColorTransform", "ImageReaderColorTransform_Config.cntk", "ColorTransform_Test",
         "ImageReaderColorTransform_Control.txt", 1, 1, 2, 1, 0),
    _img("ImageReaderGrayscale", "ImageReaderGrayscale_Config.cntk", "Grayscale_Test",
         "ImageReaderGrayscale_Control.txt", 1, 1, 1, 1, 0),
    _img("ImageReaderMissingImage", "ImageReaderMissingImage_Config.cntk", "MissingImage_Test", "", 4, 4, 1, 1, 0,
         mode="error", error="Cannot open file 'imageDoesNotExists/black.jpg'",
         names=("Cannot open file 'imageDoesNotExists/black.jpg'", "ImageReaderMissingImage_map.txt")),
    _img("ImageReaderEmptyTransforms", "ImageTransforms_Config.cntk", "SameShapeEmptyTransforms_Test",
         "ImageTransforms_Control.txt", 2, 1, 1, 1, 0),
    _img("ImageReaderInvalidEmptyTransforms", "ImageTransforms_Config.cntk", "DifferentShapeEmptyTransforms_Test",
         "", 2, 2, 1, 1, 0, mode="error",
         error="Packer currently does not support samples with varying shapes.Please make sure there is a "
               "transform that unifies the shape of samples for input stream 'features' or the deserializer "
               "provides samples with the same shape.",
         names=("samples with varying shapes", "'features'", "ImageReaderVaryingShape_map.txt")),
    _img("ImageReaderMissingScaleTransforms", "ImageTransforms_Config.cntk", "NoScaleTransforms_Test", "",
         2, 2, 1, 1, 0, mode="error",
         error="Packer currently does not support samples with varying shapes.Please make sure there is a "
               "transform that unifies the shape of samples for input stream 'features' or the deserializer "
               "provides samples with the same shape.",
         names=("samples with varying shapes", "'features'", "ImageReaderVaryingShape_map.txt")),
    _img("ImageReaderNoMatchingIds", "ImageDeserializers.cntk", "ImageAndImageReaderSimple_Test", "",
         2, 2, 1, 1, 0, mode="error",
         params=('MapFile="$RootDir$/Base64WithStringIds_map.txt"',
                 'SecondMapFile="$RootDir$/Base64WithStringIdsAnother_map.txt"',
                 'Deserializer="Base64ImageDeserializer"', "useNumericSequenceKeys=false"),
         error="Could not reconcile data between different deserializers. Keys of logical sequences do not match.",
         names=("Could not reconcile data between different deserializers", "Base64WithStringIds_map.txt",
                "Base64WithStringIdsAnother_map.txt", "image0")),
    # EmptyDataDirFixture: the working directory is the test root, the map given by its absolute path
    Case("ImageReader3DotsSyntaxInMapFile", "images", f"{IMG} ImageReader3DotsSyntaxInMapFile", ".",
         "Config/ImageDeserializers.cntk", "3DotsExpansionTest", "Control/ImageReader3DotsSyntaxInMapFile_Control.txt",
         1, 2, 1, 1, 1, sparse_labels=True, params=('MapFile="{root}/Data/ImageReader3Dots_map.txt"',)),
]


def _htk(name, config, control, e, mb, ep, nf, nl, subset=0, subsets=1, elem="float", tol=False, **kw):
    return Case(name, "htk", f"{HTK} {name}", "Data/AN4", f"Config/{config}", "Simple_Test",
                f"Control/{control}" if control else "", e, mb, ep, nf, nl, subset, subsets, elem=elem,
                tolerance=tol, **kw)


_C1 = "HTKMLFReaderSimpleDataLoop1_5_11_Control.txt"
_C2 = "HTKMLFReaderSimpleDataLoop2_12_Control.txt"
_C4 = "HTKMLFReaderSimpleDataLoop4_8_14_Control.txt"
_C6 = "HTKMLFReaderSimpleDataLoop6_16_17_Control.txt"
_C21_0 = "HTKMLFReaderSimpleDataLoop21_0_Control.txt"
_C21_1 = "HTKMLFReaderSimpleDataLoop21_1_Control.txt"

HTK_CASES = [
    _htk("HTKMLFReaderSimpleDataLoop1", "HTKMLFReaderSimpleDataLoop1_Config.cntk", _C1, 500, 250, 2, 1, 1, tol=True),
    _htk("HTKMLFReaderSimpleDataLoop2", "HTKMLFReaderSimpleDataLoop2_Config.cntk", _C2, 500, 250, 2, 1, 1),
    _htk("HTKMLFReaderSimpleDataLoop4", "HTKMLFReaderSimpleDataLoop4_Config.cntk", _C4, 500, 250, 2, 1, 1),
    _htk("HTKMLFReaderSimpleDataLoop5", "HTKMLFReaderSimpleDataLoop5_Config.cntk", _C1, 500, 250, 2, 1, 1, tol=True),
    _htk("HTKMLFReaderSimpleDataLoop7", "HTKMLFReaderSimpleDataLoop7_Config.cntk", "", 0, 0, 0, 1, 1,
         mode="construct_error", error="std::invalid_argument (frameMode and truncated both true)",
         names=("frameMode", "truncated", "Simple_Test.reader")),
    _htk("HTKMLFReaderSimpleDataLoop8", "HTKMLFReaderSimpleDataLoop8_Config.cntk", _C4, 500, 250, 2, 1, 1),
    _htk("HTKMLFReaderSimpleDataLoop11", "HTKMLFReaderSimpleDataLoop11_Config.cntk", _C1, 500, 250, 2, 1, 1,
         elem="double", tol=True),
    _htk("HTKMLFReaderSimpleDataLoop12", "HTKMLFReaderSimpleDataLoop12_Config.cntk", _C2, 500, 250, 2, 1, 1,
         elem="double"),
    _htk("HTKMLFReaderSimpleDataLoop14", "HTKMLFReaderSimpleDataLoop14_Config.cntk", _C4, 500, 250, 2, 1, 1,
         elem="double"),
    _htk("HTKMLFReaderSimpleDataLoop16", "HTKMLFReaderSimpleDataLoop16_Config.cntk", _C6, 500, 250, 2, 1, 1,
         elem="double", tol=True),
    _htk("HTKMLFReaderSimpleDataLoop21_0", "HTKMLFReaderSimpleDataLoop21_Config.cntk", _C21_0, 500, 250, 2, 1, 1,
         0, 2),
    _htk("HTKMLFReaderSimpleDataLoop21_1", "HTKMLFReaderSimpleDataLoop21_Config.cntk", _C21_1, 500, 250, 2, 1, 1,
         1, 2, tol=True),
    _htk("HTKDeserializersSimpleDataLoop1", "HTKDeserializersSimpleDataLoop1_Config.cntk", _C1, 500, 250, 2, 1, 1,
         tol=True),
    _htk("HTKDeserializersSimpleDataLoop5", "HTKDeserializersSimpleDataLoop5_Config.cntk", _C1, 500, 250, 2, 1, 1,
         tol=True),
    _htk("HTKDeserializersSimpleDataLoop11", "HTKDeserializersSimpleDataLoop11_Config.cntk", _C1, 500, 250, 2, 1, 1,
         elem="double", tol=True),
    _htk("HTKDeserializersSimpleDataLoop21_0", "HTKDeserializersSimpleDataLoop21_Config.cntk", _C21_0, 500, 250, 2,
         1, 1, 0, 2),
    _htk("HTKDeserializersSimpleDataLoop21_1", "HTKDeserializersSimpleDataLoop21_Config.cntk", _C21_1, 500, 250, 2,
         1, 1, 1, 2, tol=True),
    _htk("HTKDeserializersSimpleDataLoop4", "HTKDeserializersSimpleDataLoop4_Config.cntk", _C4, 500, 140, 2, 1, 1),
    _htk("HTKDeserializersSimpleDataLoop8", "HTKDeserializersSimpleDataLoop8_Config.cntk", _C4, 500, 140, 2, 1, 1),
    _htk("HTKDeserializersSimpleDataLoop14", "HTKDeserializersSimpleDataLoop14_Config.cntk", _C4, 500, 140, 2, 1, 1,
         elem="double"),
    _htk("HTKDeserializers_NonExistingScpFile", "HTKDeserializers_NonExistingScpFile.cntk", "", 0, 0, 0, 1, 1,
         mode="construct_error", error="std::runtime_error (the SCP file does not exist)",
         names=("NonExistingScpFile",)),
    _htk("HTKDeserializersSimpleDataLoop2", "HTKDeserializersSimpleDataLoop2_Config.cntk", _C2, 500, 250, 2, 1, 1),
    _htk("HTKDeserializersSimpleDataLoop12", "HTKDeserializersSimpleDataLoop12_Config.cntk", _C2, 500, 250, 2, 1, 1,
         elem="double"),
]

UCI_CASES = [
    Case("UCIFastReaderSimpleDataLoop", "uci", f"{UCI} UCIFastReaderSimpleDataLoop", "Data",
         "Config/UCIFastReaderSimpleDataLoop_Config.cntk", "Simple_Test",
         "Control/UCIFastReaderSimpleDataLoop_Control.txt", 500, 250, 2, 1, 1),
]


def _ctf(name, config, section, control, e, mb, ep, nf, nl=0, subset=0, subsets=1, sf=False, sl=False, shared=True,
         elem="float", both=True, **kw):
    """A CTF case; ``both``: the C++ test runs it twice, the second time with ``defMBSize=true``."""
    rows = []
    for params in ([(), ("defMBSize=true",)] if both else [()]):
        rows.append(Case(name + ("_defMBSize" if params else ""), "ctf", f"{CTF} CNTKTextFormatReader_{name}",
                         "Data/CNTKTextFormatReader", f"Config/CNTKTextFormatReader/{config}", section,
                         f"Control/CNTKTextFormatReader/{control}" if control else "", e, mb, ep, nf, nl, subset,
                         subsets, sf, sl, shared, params, elem, **kw))
    return rows


_MAXERR = "Reached the maximum number of allowed errors while reading the input file ({})."

CTF_CASES = [
    *_ctf("Simple_dense", "dense.cntk", "Simple", "Simple_dense.txt", 1000, 250, 10, 1, 1),
    *_ctf("Simple_dense_single_stream", "dense.cntk", "Simple_single_stream", "Simple_dense_single_stream.txt",
          1000, 250, 10, 1, 0),
    *_ctf("MNIST_dense", "dense.cntk", "MNIST", "MNIST_dense.txt", 1000, 1000, 1, 1, 1, elem="double"),
    *_ctf("1x1_1_dense", "dense.cntk", "1x1", "1x1_1_dense.txt", 1, 1, 1, 1, elem="double"),
    *_ctf("1x1_2_dense", "dense.cntk", "1x1", "1x1_2_dense.txt", 2, 1, 3, 1, elem="double"),
    *_ctf("1x10_dense", "dense.cntk", "1x10", "1x10_dense.txt", 10, 10, 1, 1),
    *_ctf("10x1_MI_2_dense", "dense.cntk", "10x1_MI", "10x1_MI_2_dense.txt", 7, 3, 3, 4, 3),
    *_ctf("1x10_MI_1_dense", "dense.cntk", "10x1_MI", "10x1_MI_1_dense.txt", 10, 1, 3, 4, 3),
    *_ctf("10x10_dense", "dense.cntk", "10x10", "10x10_dense.txt", 100, 100, 1, 1),
    *_ctf("100x1_1_dense", "dense.cntk", "100x1", "100x1_1_dense.txt", 10, 1, 10, 1, 1, elem="double"),
    *_ctf("100x1_2_dense", "dense.cntk", "100x1", "100x1_2_dense.txt", 5, 3, 4, 1, 1, elem="double"),
    *_ctf("50x20_jagged_sequences_dense", "dense.cntk", "50x20_jagged_sequences", "50x20_jagged_sequences_dense.txt",
          508, 508, 1, 1, elem="double"),
    *_ctf("1x1_sparse", "sparse.cntk", "1x1", "1x1_sparse.txt", 1, 1, 1, 1, sf=True),
    *_ctf("1x2_sparse", "sparse.cntk", "1x2", "1x2_sparse.txt", 2, 2, 1, 1, sf=True),
    *_ctf("1x10_sparse", "sparse.cntk", "1x10", "1x10_sparse.txt", 10, 10, 1, 1, sf=True, elem="double"),
    *_ctf("10x10_sparse", "sparse.cntk", "10x10", "10x10_sparse.txt", 100, 100, 1, 1, sf=True, elem="double"),
    *_ctf("3x5_MI_sparse", "sparse.cntk", "3x5_MI", "3x5_MI_sparse.txt", 15, 15, 1, 3, sf=True),
    *_ctf("20x10_MI_jagged_samples_sparse", "sparse.cntk", "20x10_MI_jagged_samples",
          "20x10_MI_jagged_samples_sparse.txt", 200, 200, 1, 3, sf=True),
    *_ctf("50x20_jagged_sequences_sparse", "sparse.cntk", "50x20_jagged_sequences",
          "50x20_jagged_sequences_sparse.txt", 564, 564, 1, 1, sf=True, both=False),
    *_ctf("100x100_jagged_sparse", "sparse.cntk", "100x100_jagged", "100x100_jagged_sparse.txt", 4887, 4887, 1, 1,
          sf=True, both=False),
    *_ctf("space_separated", "edge_cases.cntk", "space_separated", "space_separated.txt", 2, 2, 1, 3, elem="double"),
    *_ctf("missing_trailing_newline", "edge_cases.cntk", "missing_trailing_newline", "missing_trailing_newline.txt",
          2, 2, 1, 1, elem="double"),
    # test({}) must throw; test({defMBSize=true}) then compares with the control
    *_ctf("blank_lines", "edge_cases.cntk", "blank_lines", "", 2, 2, 1, 1, elem="double", both=False, mode="error",
          error=_MAXERR.format("contains_blank_lines.txt"), names=(_MAXERR.format("contains_blank_lines.txt"),)),
    Case("blank_lines_defMBSize", "ctf", f"{CTF} CNTKTextFormatReader_blank_lines", "Data/CNTKTextFormatReader",
         "Config/CNTKTextFormatReader/edge_cases.cntk", "blank_lines", "Control/CNTKTextFormatReader/blank_lines.txt",
         2, 2, 1, 1, params=("defMBSize=true",), elem="double"),
    *_ctf("blank_lines_ignored", "edge_cases.cntk", "blank_lines_ignored", "blank_lines.txt", 3, 3, 1, 1,
          elem="double", both=False),
    *_ctf("duplicate_inputs", "edge_cases.cntk", "duplicate_inputs", "", 1, 1, 1, 2, elem="double", both=False,
          mode="error", error=_MAXERR.format("duplicate_inputs.txt"),
          names=(_MAXERR.format("duplicate_inputs.txt"), "duplicate_inputs.txt:1:19")),
    *_ctf("empty_samples", "edge_cases.cntk", "empty_samples", "empty_samples.txt", 6, 6, 1, 1, 1, sl=True,
          shared=False),
    *_ctf("ref_data_with_escape_sequences", "edge_cases.cntk", "ref_data_with_escape_sequences",
          "ref_data_with_escape_sequences.txt", 9, 9, 1, 1, 1, sf=True, shared=False),
    *_ctf("5x10_and_5x5_jagged_minibatch_10", "dense.cntk", "5x10_and_5x5_jagged", "", 40, 10, 3, 2,
          shared=False, elem="double", both=False, mode="composite", then_section="5x10_and_5x5_jagged_composite"),
    *_ctf("5x10_and_5x5_jagged_minibatch_21", "dense.cntk", "5x10_and_5x5_jagged", "", 413, 21, 3, 2,
          shared=False, elem="double", both=False, mode="composite", then_section="5x10_and_5x5_jagged_composite"),
    *_ctf("NoFirstMinibatchData", "dense.cntk", "1x2", "NonExistent.txt", 10, 1, 10, 1, 0, 1, 2, elem="double",
          both=False),
]


def _cbf(name, section, control, e, mb, ep, nf, nl=0, sf=False, elem="float"):
    return Case(f"CNTKBinaryReader_{name}", "cbf", f"{CBF} CNTKBinaryReader_{name}", "Data/CNTKBinaryReader",
                "Config/CNTKBinaryReader/test.cntk", section, f"Control/CNTKTextFormatReader/{control}", e, mb, ep,
                nf, nl, 0, 1, sf, elem=elem)


CBF_CASES = [
    _cbf("Simple_dense", "Simple", "Simple_dense.txt", 1000, 250, 10, 1, 1),
    _cbf("MNIST_dense", "MNIST", "MNIST_dense.txt", 1000, 1000, 1, 1, 1, elem="double"),
    _cbf("10x10_dense", "10x10_dense", "10x10_dense.txt", 100, 100, 1, 1),
    _cbf("50x20_jagged_sequences_dense", "50x20_jagged_sequences_dense", "50x20_jagged_sequences_dense.txt", 508, 508,
         1, 1, elem="double"),
    _cbf("10x10_sparse", "10x10_sparse", "10x10_sparse.txt", 100, 100, 1, 1, sf=True, elem="double"),
    _cbf("50x20_jagged_sequences_sparse", "50x20_jagged_sequences_sparse", "50x20_jagged_sequences_sparse.txt", 564,
         564, 1, 1, sf=True),
]

CASES = IMAGE_CASES + HTK_CASES + UCI_CASES + CTF_CASES + CBF_CASES

_NOT_PUBLISHED = "CNTK never published {} (its git blob is absent from every mirror of CNTK's repository)"

#: C++ cases that cannot run: name -> why
UNAVAILABLE = {
    "CNTKTextFormatReader_100x100x3 (2 runs)": _NOT_PUBLISHED.format(
        "Data/CNTKTextFormatReader/100x100x3_jagged_sequences_dense.txt nor its sorted control"),
    "CNTKTextFormatReader_200x200x2_seq2seq": _NOT_PUBLISHED.format(
        "Data/CNTKTextFormatReader/200x200x2_seq2seq_dense.txt nor its sorted control"),
    "HTKMLFReaderSimpleDataLoop3, 13; HTKDeserializersSimpleDataLoop3": _NOT_PUBLISHED.format(
        "Control/HTKMLFReaderSimpleDataLoop3_13_Control.txt"),
    "HTKMLFReaderSimpleDataLoop9, 19; HTKDeserializersSimpleDataLoop9, 19": _NOT_PUBLISHED.format(
        "Control/HTKMLFReaderSimpleDataLoop9_19_Control.txt"),
    "HTKMLFReaderSimpleDataLoop10, 20; HTKDeserializersSimpleDataLoop10, 20": _NOT_PUBLISHED.format(
        "Control/HTKMLFReaderSimpleDataLoop10_20_Control.txt"),
    "HTKMLFReaderSimpleDataLoop22": _NOT_PUBLISHED.format(
        "Control/HTKMLFReaderSimpleDataLoop22_Control.txt, nor the AN4 lattices and HMM files it reads"),
    "HTKNoIVector, HTKIVectorFrame, HTKNoPropagationOfUtteranceIVectorFrame, HTKIVectorSequence, HTKIVectorBptt":
        "their data (CNTK_EXTERNAL_TESTDATA_SOURCE_DIRECTORY/iVector) and controls were never published",
}


def by_name(name: str) -> Case:
    """The case called ``name``."""
    for c in CASES:
        if c.name == name:
            return c
    raise KeyError(name)
