"""Public ids: unguessable, and each character drawn evenly from [a-z0-9]."""

import re
from collections import Counter

from common.ids import new_public_id


def test_an_id_is_its_prefix_and_16_characters_of_a_to_z_and_0_to_9():
    ids = {new_public_id("apr") for _ in range(2000)}
    assert len(ids) == 2000
    assert all(re.fullmatch(r"apr_[a-z0-9]{16}", public_id) for public_id in ids)


def test_every_position_uses_the_whole_alphabet_evenly():
    # 36 characters × 16 positions; 7,200 ids put ≈200 of each character at each position. A position
    # stuck on a few characters (a base conversion that runs out of digits) would leave many at 0.
    counts = [Counter() for _ in range(16)]
    for _ in range(7200):
        for position, character in enumerate(new_public_id("x")[2:]):
            counts[position][character] += 1
    for position in counts:
        assert len(position) == 36
        assert min(position.values()) > 120 and max(position.values()) < 290
