"""Fixtures of the conformance tests: CNTK's reader-test tree, written once per session from the
vendored data (``tests/data/cntk_reader_tests``, see its SOURCES.md)."""
import pytest

import readertests


@pytest.fixture(scope="session")
def reader_tests_root(tmp_path_factory):
    """CNTK's ``Tests/UnitTests/ReaderTests`` (Config, Data, Control), every file checked against
    CNTK's git blob id (:func:`readertests.materialize`)."""
    return readertests.materialize(tmp_path_factory.mktemp("cntk") / "ReaderTests")
