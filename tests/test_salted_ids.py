"""Fresh ids are salted per example (fuzz.generator.machine.salted_id): pure checks of what the salt keeps."""
from fuzz.generator.edges import band_of
from fuzz.generator.coverage import SCALE_FACTORS
from fuzz.generator.machine import SPECIAL_IDS, salted_id, scaled

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
    assert all(salted_id(b, 3) == b for b in SPECIAL_IDS if b > 2)
    assert {2**8, 2**16 - 1, 2**31, 2**64 - 1} <= set(SPECIAL_IDS)


def test_ids_of_the_small_bands_stay_in_their_band_and_differ_between_examples():
    """An id from 2^8 to 2^30 stays in its power-of-two band once salted (a small id's fast path is
    what drawing it is for), and examples still send different ids; ids below 2^8 move past 2^40."""
    for seq_id in (300, 2**16 + 77, 2**29 + 5):
        salted = [salted_id(seq_id, salt) for salt in range(1, 6)]
        assert len(set(salted)) == 5 and all(s.bit_length() == seq_id.bit_length() for s in salted)
    # in a band without boundary ids the wrap is the band's power of two: twins modulo 2^8 still are
    assert all(salted_id(2**20 + 5, salt) % 2**8 == salted_id(2**20 + 5 + 3 * 2**8, salt) % 2**8 for salt in range(1, 20))
    assert salted_id(5, 1) > 2**40


def test_a_salted_id_never_lands_on_a_boundary_id_of_its_band():
    """Boundary ids are sent unsalted; a salted id landing on one would make two drawn ids one
    sequence in some replays of an example and not in others."""
    for top in (2**8, 2**15, 2**16):
        band = [i for i in range(top, 2 * top) if i not in SPECIAL_IDS]
        for salt in (1, 2, 3, 77):
            salted = {salted_id(i, salt) for i in band}
            assert len(salted) == len(band) and salted <= set(band)


def test_scaled_twins_are_the_id_times_a_factor_or_divided_where_the_product_does_not_fit():
    factors = {scaled(7, step) // 7 for step in (1, 2, 4, 8, 2**8, 3 * 2**16, 10**6)}
    assert factors == set(SCALE_FACTORS)
    assert scaled(10**19, 8) == 10**18  # x10 past 2^64: divided instead
    assert scaled(2**64 - 1, 1) is None and scaled("7", 1) is None  # odd, too large; a string
    assert scaled(2**31 - 1, 1, bits=32) is None
