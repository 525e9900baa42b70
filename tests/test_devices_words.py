"""``DEVICES`` / ``--devices`` say what they mean under a TPU target too (needs-c 4): the chips
of a slice, not only CPU host devices (repro/cli.py picks the smallest slice that has them)."""

from __future__ import annotations

import pytest

from repro.case import CaseError, read_case
from repro.options import BISECT, OPTIONS, REPRO


@pytest.mark.parametrize("entry", [BISECT, REPRO])
def test_the_devices_option_names_the_chips_of_a_tpu_slice(entry):
    (option,) = [o for o in OPTIONS if o.flag == "--devices"]
    words = option.help_for(entry)
    assert "CPU host devices" in words and "TPU target" in words and "slice" in words


def test_a_bad_devices_constant_says_both_meanings(tmp_path):
    path = tmp_path / "case.py"
    path.write_text("DEVICES = 0\n\n\ndef case(n=1):\n    return None, ()\n")
    with pytest.raises(CaseError, match="DEVICES") as raised:
        read_case(path)
    assert "CPU host devices" in str(raised.value) and "TPU target" in str(raised.value)
