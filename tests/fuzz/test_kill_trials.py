"""CI's share of the kill trials (tests/fuzz/kill_trials.py): two SIGKILLs at random moments of
each write (convert, the CTF index cache, the UCIFastReader binary cache) leave the old file or the
complete new one under the final name. The training kind is tested in CI by
tests/actions/test_actions_train.py::test_killed_run_resumes_exactly; the campaign runs 20 of each."""
from __future__ import annotations

import random

import pytest

from kill_trials import SETUPS, file_trials


@pytest.mark.parametrize("kind", sorted(SETUPS))
def test_a_killed_write_leaves_the_old_or_the_new_file(kind):
    res = file_trials(kind, 2, random.Random(kind))
    assert res["old"] + res["new"] == 2
