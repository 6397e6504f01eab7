"""cntkio.registry: one table of deserializer, transform and legacy reader types by config name."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from cntkio import registry
from cntkio.config import parse_config
from cntkio.deserializers import base
from cntkio.readers import UnsupportedReaderError, reader_spec


@pytest.fixture
def clean_registry():
    """Undo whatever a test registers."""
    saved = (dict(registry._DESERIALIZERS), dict(registry._TRANSFORMS), dict(registry._READERS))
    yield
    for table, before in zip((registry._DESERIALIZERS, registry._TRANSFORMS, registry._READERS), saved):
        table.clear()
        table.update(before)


def test_the_builtin_ctf_line_resolves_lazily():
    assert "CNTKTextFormatDeserializer" in registry.registered_deserializers()
    from cntkio.deserializers.ctf import build
    assert registry.deserializer_factory("CNTKTextFormatDeserializer") is build
    assert registry.deserializer_factory("NoSuchType") is None


def test_import_cntkio_and_listing_types_load_no_format():
    code = textwrap.dedent("""
        import sys, cntkio
        from cntkio import registry
        from cntkio.deserializers import base
        assert "CNTKTextFormatDeserializer" in registry.registered_deserializers()
        assert "CNTKTextFormatReader" in registry.implemented_reader_types()
        print(sorted(m for m in sys.modules if m.startswith("cntkio.deserializers.ctf")))
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_old_names_in_base_are_the_registry():
    assert base.register_deserializer is registry.register_deserializer
    assert base.build_deserializer is registry.build_deserializer
    assert base.registered_deserializers is registry.registered_deserializers
    assert base._REGISTRY is registry._DESERIALIZERS


def test_unknown_types_list_the_known_ones(clean_registry):
    with pytest.raises(ValueError, match="unknown deserializer type 'Nope'; cntkio implements: "
                                         ".*CNTKTextFormatDeserializer"):
        registry.build_deserializer({"type": "Nope"})
    with pytest.raises(ValueError, match=r"unknown transform type 'Nope'; cntkio implements: Color, Crop, "
                                         r"Intensity, Mean, Scale, Transpose"):
        registry.build_transform({"type": "Nope"})


def test_a_registered_transform_is_built_from_its_config(clean_registry):
    class Scale:
        def __init__(self, config, **options):
            self.factor = float(config["factor"])
            self.options = options

        def __call__(self, x):
            return x * self.factor
    registry.register_transform("ToyScale", Scale)
    assert registry.registered_transforms() == ["Color", "Crop", "Intensity", "Mean", "Scale", "ToyScale",
                                                "Transpose"]
    t = registry.build_transform({"TYPE": "ToyScale", "factor": "2.5"}, seed=3)
    assert t(2.0) == 5.0 and t.options == {"seed": 3}
    assert registry.transform_factory("ToyScale") is Scale


def test_a_factory_named_by_module_path_is_imported_on_first_use(clean_registry):
    registry.register_deserializer("LazyToy", "cntkio.deserializers.ctf:build")
    from cntkio.deserializers.ctf import build
    assert registry.deserializer_factory("LazyToy") is build
    registry.register_deserializer("Broken", "cntkio.no_such_module:build")
    with pytest.raises(ImportError, match="'Broken' is registered as 'cntkio.no_such_module:build'"):
        registry.deserializer_factory("Broken")


def test_registering_checks_its_arguments(clean_registry):
    with pytest.raises(TypeError, match="must be callable"):
        registry.register_deserializer("X", 42)
    with pytest.raises(ValueError, match="'module:attribute'"):
        registry.register_transform("X", "just_a_module")
    with pytest.raises(TypeError, match="non-empty str"):
        registry.register_deserializer("", lambda c: c)
    with pytest.raises(ValueError, match="cannot be redefined"):
        registry.register_reader("compositedatareader", "CNTKTextFormatDeserializer")


def test_readertypes_resolve_through_the_registry(clean_registry):
    assert registry.reader_deserializer_type("cntktextformatreader") == \
        ("CNTKTextFormatReader", "CNTKTextFormatDeserializer")
    assert registry.reader_deserializer_type("DSSMReader") is None
    assert registry.reader_deserializer_type("ucifastreader") == ("UCIFastReader", "UCIFastReaderDeserializer")
    # a legacy reader whose deserializer is not registered is listed as unimplemented
    assert "CNTKBinaryReader" in registry.registered_readers()
    assert ("CNTKBinaryReader" in registry.implemented_reader_types()) == \
        ("CNTKBinaryFormatDeserializer" in registry.registered_deserializers())


def test_a_registered_reader_type_reads_its_section_as_that_deserializer(clean_registry):
    section = parse_config("""reader = [ readerType = ToyReader; file = d.txt
        input = [ x = [ dim = 2; format = dense ] ] ]""")("reader")
    with pytest.raises(UnsupportedReaderError, match="readerType 'ToyReader' is not implemented"):
        reader_spec(section)
    registry.register_reader("ToyReader", "CNTKTextFormatDeserializer")
    assert "ToyReader" in registry.implemented_reader_types()
    spec = reader_spec(section)
    assert spec.reader_type == "ToyReader"
    assert spec.deserializers[0]["type"] == "CNTKTextFormatDeserializer"
    assert spec.deserializers[0]["input"]["x"]["dim"] == 2


def test_a_registered_deserializer_type_is_found_by_a_config_in_any_case(clean_registry):
    def factory(config, **kw):
        raise AssertionError("not built in this test")
    registry.register_deserializer("ToyFormat", factory)
    spec = reader_spec(parse_config("""reader = [ deserializers = ([ type = toyformat; file = a.bin
        input = [ x = [ dim = 4 ] ] ]) ]""")("reader"))
    assert spec.deserializers[0]["type"] == "ToyFormat"
    assert spec.deserializers[0]["input"] == {"x": {"dim": "4"}}
