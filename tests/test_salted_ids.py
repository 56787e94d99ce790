"""Fresh ids are salted per example (fuzz.generator.machine.salted_id): pure checks of what the salt keeps."""
from fuzz.generator.edges import band_of
from fuzz.generator.machine import SPECIAL_IDS, salted_id

LARGE = (2**40 + 9, 2**53 + 7, 76428620070309313, 2**63 + 3, 2**64 - 5)


def test_large_ids_differ_between_examples_and_keep_their_magnitude():
    """A shrinker's consecutive replays must not send the same large id (a sequence one left live
    would hold a slot the next one's reference counts free), yet a large id stays in its band."""
    for seq_id in LARGE:
        salted = [salted_id(seq_id, salt) for salt in range(1, 6)]
        assert len(set(salted)) == 5 and seq_id not in salted
        assert all(s.bit_length() == seq_id.bit_length() and band_of(s) == band_of(seq_id) for s in salted)


def test_one_example_shifts_every_id_alike_modulo_small_powers_of_two():
    """Ids that collide modulo 2**p (p <= 40: a truncated or hashed key) still collide once salted,
    whichever band each is in."""
    twins = (5, 5 + 2**40, 5 + 3 * 2**41, 5 + 2**63, 5 + 2**53 * 3)  # all equal modulo 2**40
    for salt in (1, 7, 12345):
        for p in (8, 16, 32, 40):
            assert len({salted_id(t, salt) % 2**p for t in twins}) == 1, (salt, p)


def test_boundary_ids_are_sent_as_they_are():
    assert all(salted_id(b, 3) == b for b in SPECIAL_IDS if b >= 2**31)
