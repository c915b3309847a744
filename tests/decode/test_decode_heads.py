"""Every head family's decode part offers one API (harness.decode.heads.FamilyDecode), and the anchors each
decodes against are answered in one place (family_anchors)."""

from __future__ import annotations

import pytest

from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig, SsdConfig
from harness.decode.heads import FamilyDecode, decoder, family_anchors, family_decode
from harness.families import descriptor, part

PIXELS = (((10.0, 13.0), (16.0, 30.0)),)
FRACTIONS = (((0.1, 0.1), (0.2, 0.1)),)


@pytest.mark.parametrize("family", list(HeadFamily))
def test_every_family_decode_part_has_the_one_api(family):
    found = family_decode(family)
    for name in (n for n in dir(FamilyDecode) if not n.startswith("_")):
        assert callable(getattr(found, name)), f"{family.value}: decode part has no {name}"
    assert decoder(family) is found.decode
    assert callable(getattr(part(family, "decode"), "bbox_only_proposals", None)) == bool(
        descriptor(family).bbox_only_op
    )


@pytest.mark.parametrize("family", list(HeadFamily))
def test_the_anchors_a_family_decodes_against(family):
    ssd = SsdConfig(FRACTIONS, centers_scale_factor=10, bbox_dimensions_scale_factor=5)
    config = DecodeConfig((64, 64), anchors=PIXELS, ssd=ssd)
    got = family_anchors(family, config)
    if not descriptor(family).anchored:
        assert got == ()
    elif descriptor(family).config_option:  # SSD: its config's anchors
        assert got == FRACTIONS
        assert family_anchors(family, DecodeConfig((64, 64), anchors=PIXELS)) == PIXELS
    else:
        assert got == PIXELS
