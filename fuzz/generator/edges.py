"""Where careless implementations break, as values: the edges of a model's dtype that sums and
inputs should reach, and the families of ids that a careless key would make one.

Pure (only the server's id limit comes from the reference model): the generator draws from
these, the coverage tracker (coverage.py) classifies what was sent and answered with them, and the
unit tests check both without a server.
"""
from __future__ import annotations

import math

from ..checker.model import MAX_STRING_ID, too_long
from ..spec import FRACTION_LIMIT, exact_range, is_fraction  # noqa: F401 (the generator's edges)


class SumTarget(int):
    """A drawn value that means "bring the running sum to this": its int value is the sum a
    START aims at, minus the model's initial sum, so a START sent with it lands there as it is,
    and the machine's _fit turns it into target - total for a request of a running sequence.
    Request's converter makes it a plain number before it goes anywhere."""


class FloatTarget(float):
    """SumTarget for an FP32 model."""


class Wide(float):
    """An FP32 value sent as it is, where the generator otherwise keeps sums exact: non-finite,
    past 2**24, subnormal or inexact. Past the exact range an FP32 sum still has one right answer
    (IEEE 754 rounding: ModelSpec.add), which a model that sanitises inputs, keeps its state in
    float64 or clamps it gets wrong."""


class WideTarget(FloatTarget):
    """A sum target past where FP32 sums are exact (inf, NaN, past 2**24): brought there as it is."""


def rounding_target(digits: int) -> float:
    """A sum just past where a float dtype of `digits` significant bits keeps whole numbers
    exact, from which every odd step rounds (machine._fit keeps a sum past there by such steps)."""
    return 2.0**digits + 2


def wide_values(digits: int, largest: float) -> tuple:
    """Values a float model gets now and then, sent as they are (Wide): the non-finite ones, the
    largest, one past 2**digits (rounded on the wire), an inexact decimal. No subnormal:
    TensorFlow's CPU threads (and many GPU kernels) flush them to zero, which IEEE's default does not."""
    # (2**53 + 1 is no float64: FP64's one past is 2**53 + 2, sent as it is)
    past = 2.0**digits + (1 if digits < 53 else 2)
    return (math.inf, -math.inf, math.nan, largest, -largest, past, 2.0**(digits + 1) + 2 * (past - 2.0**digits), 0.1)


def wide_targets(digits: int, largest: float) -> tuple:
    """Sums a float model's steering brings a sequence to (WideTarget): from there on small values round."""
    return (math.inf, -math.inf, math.nan, rounding_target(digits), -rounding_target(digits), 2.0**(digits + 2), largest)


FLT_MAX = 3.4028234663852886e38
WIDE_VALUES = wide_values(24, FLT_MAX)  # FP32's
WIDE_TARGETS = wide_targets(24, FLT_MAX)


def core_targets(lo: float, hi: float, floating: bool, limit: float = FRACTION_LIMIT) -> tuple:
    """Sums a running total should be brought to first: the range's ends and their neighbours,
    0 and ±1 (where a sentinel or an off-by-one overflow check breaks); for a float dtype also
    sums with a fraction, up to `limit` (the dtype's fraction limit; FP32's by default)."""
    out = {lo, lo + 1, hi - 1, hi, 0, 1, -1}
    if floating:
        out.update((0.5, -0.5, 0.25, -0.75, limit / 2 + 0.5, -(limit / 2) - 0.25))
    return tuple(sorted(v for v in out if lo <= v <= hi))


def power_targets(lo: float, hi: float) -> tuple:
    """±2**k and its neighbours within the range (where a counter or a narrower type wraps)."""
    out = set()
    top = int(math.log2(max(abs(lo), abs(hi), 2)))
    for k in range(1, top + 1):
        for v in (2**k - 1, 2**k, 2**k + 1):
            out.update((v, -v))
    return tuple(sorted(v for v in out if lo <= v <= hi))


def value_edges(value: float, lo: float, hi: float) -> tuple:
    """The edges `value` stands on, as coverage labels: "min", "max", "0", "+1", "-1",
    "2^k" and "2^k±1" (k >= 3, either sign), "fraction", "-0.0"."""
    labels = []
    if isinstance(value, float) and not math.isfinite(value):
        return ("nan",) if math.isnan(value) else ("inf",) if value > 0 else ("-inf",)
    if not lo <= value <= hi:  # a float sum past its exact range (FP32: 2**24): rounded
        return (past_exact(hi),)
    if isinstance(value, float) and value == 0 and math.copysign(1, value) < 0:
        return ("-0.0",)
    if value == lo:
        labels.append("min")
    if value == hi:
        labels.append("max")
    if value == 0:
        labels.append("0")
    elif value in (1, -1):
        labels.append("+1" if value > 0 else "-1")
    if is_fraction(value):
        labels.append("fraction")
    elif abs(value) >= 7:
        magnitude = int(abs(value))
        for d, label in ((0, "2^k"), (1, "2^k-1"), (-1, "2^k+1")):
            m = magnitude + d
            if m & (m - 1) == 0:
                labels.append(label)
    return tuple(labels)


def past_exact(hi: float) -> str:
    """The label of a float value past where its dtype's whole numbers are exact ("past 2^24")."""
    return f"past 2^{max(1, round(math.log2(max(abs(hi), 2))))}"


VALUE_GOALS = ("min", "max", "0", "+1", "-1", "2^k", "2^k-1", "2^k+1")


def float_goals(hi: float) -> tuple:
    """The value goals a float model has beside VALUE_GOALS."""
    return ("fraction", "inf", "-inf", "nan", past_exact(hi))


FP32_GOALS = float_goals(2**24)

# -- swings: one input of a sequence against the one before it -----------------------------

# A model that codes a sequence's inputs against the one before (a delta or predictive codec, a
# slew-rate limiter) in a narrower type breaks where two neighbours both fit that type and their
# difference does not: a swing across w bits. Widths narrower than the dtype's only.
SWING_WIDTHS = (8, 16, 32)


def _width_range(w: int, signed: bool) -> tuple:
    return (-(2 ** (w - 1)), 2 ** (w - 1) - 1) if signed else (0, 2**w - 1)


def swing_widths(lo: float, hi: float) -> tuple:
    """The SWING_WIDTHS narrower than a dtype's value range lo..hi (a float's is where its whole
    numbers are exact: FP32's 8 and 16 bits; none past 2**64)."""
    if not (float(lo).is_integer() and float(hi).is_integer()) or hi > 2**64:
        return ()
    return tuple(w for w in SWING_WIDTHS if _width_range(w, lo < 0)[1] < hi)


def swings(previous, value, lo: float, hi: float) -> tuple:
    """The widths `value` swings across from `previous`: both within the width's range, their
    difference at least half its span. Labels "swing across {w} bits"."""
    if not all(isinstance(v, int) or float(v).is_integer() for v in (previous, value)):
        return ()
    out = []
    for w in swing_widths(lo, hi):
        a, b = _width_range(w, lo < 0)
        if a <= previous <= b and a <= value <= b and abs(value - previous) >= 2 ** (w - 1):
            out.append(f"swing across {w} bits")
    return tuple(out)


def swing_goals(lo: float, hi: float) -> tuple:
    return tuple(f"swing across {w} bits" for w in swing_widths(lo, hi))


def swing_values(previous, lo: float, hi: float) -> tuple:
    """Next inputs that swing from `previous`: its negation, and for each narrower width it fits,
    that width's far end on the other side of it (from 5, -128 and -32768 on an INT32 model)."""
    out = [-previous] if lo <= -previous <= hi else []
    for w in swing_widths(lo, hi):
        a, b = _width_range(w, lo < 0)
        if a <= previous <= b:
            out.append(a if previous - a >= b - previous else b)
    return tuple(out)

# -- ids ------------------------------------------------------------------------------------

# Integer ids at the powers of two where a narrower or signed type, or a float, cuts them (a byte
# or a half word: a dense table or a fast path for small ids).
ID_EDGES = (8, 16, 31, 32, 53, 63, 64)


def id_edges(seq_id) -> tuple:
    """Which of ID_EDGES an integer id stands at or next to (within 2): labels "id~2^k"."""
    if not isinstance(seq_id, int):
        return ()
    return tuple(f"id~2^{k}" for k in ID_EDGES if abs(seq_id - 2**k) <= 2 or (k == 64 and seq_id >= 2**64 - 2))


# Magnitude bands of an integer id: what a 32-bit field holds, what a float64 still tells from its
# neighbours, and past that. Twins of one family are goals once per band of the older id (a
# float64 makes neighbours one key only past 2**53; a 32-bit cut, 2**32 apart, only above 2**32).
ID_BANDS = {"below 2^32": (1, 2**32), "2^32 to 2^53": (2**32, 2**53), "past 2^53": (2**53, 2**64)}


# Ids 2^k apart (equal modulo 2^k) are goals once per k here: equal in their low 8, 16, 32 or 63
# bits, what a CORRID masked, hashed or cut to that width makes one key (the top bit: a signed
# field). Their band does not matter to such a cut. The widest, all but the id's top bit, is one
# key to a cut of any width: a CORRID packed in 48 bits beside another field, say, which no
# width here names (low_bit_widths).
SHARED_LOW_BITS = (8, 16, 32, 63)


def low_bit_widths(bits: int) -> tuple:
    """The widths of SHARED_LOW_BITS an id of a `bits`-wide CORRID has, and all but its top bit."""
    return tuple(k for k in SHARED_LOW_BITS if k < bits) + (() if bits - 1 in SHARED_LOW_BITS else (bits - 1,))


def shared_low_bits(distance: int, bits: int = 64) -> int | None:
    """The widest of low_bit_widths(bits) in which two ids `distance` apart agree (None: narrower)."""
    if distance <= 0:
        return None
    zeros = (distance & -distance).bit_length() - 1
    return max((k for k in low_bit_widths(bits) if k <= zeros), default=None)


def id_bands(bits: int) -> tuple:
    """The bands an id of a `bits`-wide CORRID can stand in."""
    return tuple(b for b, (lo, _) in ID_BANDS.items() if lo < 2**bits)


def band_of(seq_id) -> str | None:
    if not isinstance(seq_id, int):
        return None
    return next((b for b, (lo, hi) in ID_BANDS.items() if lo <= seq_id < hi), None)


# Widths of low bits that are all 0 in an aligned id: what a model that reads a zero low byte
# (or half, or word) as "no id", a tag or a shard of its own makes one key. Places "to 2^k".
ALIGNED_BITS = (8, 16, 32)


def aligned_place(seq_id) -> str | None:
    """The widest alignment "to 2^k" (ALIGNED_BITS) an integer id has: its low k bits all 0."""
    if not isinstance(seq_id, int) or seq_id <= 0:
        return None
    zeros = (seq_id & -seq_id).bit_length() - 1
    k = max((k for k in ALIGNED_BITS if k <= zeros), default=None)
    return None if k is None else f"to 2^{k}"


# A base for ids 2^k - 1 apart whose bit 0 is 1 and bit k is 0: its twin, 2^k - 1 up, is the base
# with the lowest bit of its low k bits and that of the bits above them flipped ((h+1, l-1) =
# (h^1, l^1)). A key made by XOR of the two (at k = 32 an id's halves: Java's Long.hashCode, high
# word ^ low word) then makes them one, as the modulus or a sum of the two does from any base.
FOLD = "halves fold alike at 2^"


def fold_place(step: int) -> str:
    """The place (FOLD) of a base for twins `step` = 2^k - 1 apart."""
    return f"{FOLD}{(step + 1).bit_length() - 1}"


def stands_at(seq_id, place: str) -> bool:
    """Whether an id stands at a twin's place: an alignment ("to 2^k"), a fold (FOLD) or a band
    (ID_BANDS)."""
    if place.startswith(FOLD):
        k = int(place.removeprefix(FOLD))
        return isinstance(seq_id, int) and seq_id & 1 == 1 and not seq_id >> k & 1
    return (aligned_place(seq_id) if place.startswith("to 2^") else band_of(seq_id)) == place


def into_place(seq_id: int, place: str) -> int:
    """`seq_id` moved to `place`: aligned to exactly 2^k (its low k bits 0, bit k set), a base
    whose halves fold alike with its twin's (FOLD), or into a band (into_band)."""
    if place.startswith("to 2^"):
        k = int(place.removeprefix("to 2^"))
        return (seq_id >> (k + 1) << (k + 1)) | 1 << k
    if place.startswith(FOLD):
        k = int(place.removeprefix(FOLD))
        base = (seq_id | 1) & ~(1 << k)
        # Not down to a small id (2^k itself would be 1): those are the ids every example shares
        return base if base >> (k - 1) else base | 1 << (k - 1)
    return into_band(seq_id, place)


_SPREAD = 0x9E3779B97F4A7C15  # odd, 2**64 / the golden ratio: consecutive ids land far apart


def into_band(seq_id: int, band: str) -> int:
    """`seq_id` moved into `band`: itself where it stands there, else spread over the whole band
    (most land in its top half, where a float is coarsest), a different id for a different one."""
    lo, hi = ID_BANDS[band]
    return seq_id if lo <= seq_id < hi else lo + seq_id * _SPREAD % (hi - lo)


# Families of string ids a careless implementation makes one key: each a function of an id that
# gives a different id in the same family, or None where it has none.
def _case(s):
    t = s.swapcase()
    return t if t != s else None


def _lookalike(s):
    """The same text under another Unicode normalization: a composed letter decomposed, or a
    compatibility character (the Kelvin sign for K)."""
    if "K" in s:
        return s.replace("K", "\u212a", 1)
    return s + "e\u0301" if len(s) < 127 else None


def _with_nul(s):
    return (s + "\x00x")[:128] if len(s) < 127 else None


def _long_prefix(s):
    """A long shared prefix, then a different last character."""
    body = (s * (120 // max(len(s), 1) + 1))[:120]
    return body + "b" if not s.endswith("b") else body + "c"


STRING_FAMILIES = {
    "case": _case,
    "leading space": lambda s: " " + s if len(s) < 128 else None,
    "trailing space": lambda s: s + " " if len(s) < 128 else None,
    "unicode look-alike": _lookalike,
    "embedded NUL": _with_nul,
    "long shared prefix": _long_prefix,
    "shared suffix": lambda s: ("z" + s)[:128] if s[:1] != "z" else ("y" + s)[:128],
    "length 128": lambda s: s + "#" * (MAX_STRING_ID - len(s.encode())) if len(s.encode()) < MAX_STRING_ID else None,
}


def string_twin(seq_id: str, family: str) -> str | None:
    """A member of `seq_id`'s `family` other than itself (None where it has none); never longer
    than the server's limit of 128 UTF-8 bytes."""
    twin = STRING_FAMILIES[family](seq_id)
    if twin is None or twin == seq_id or not twin or too_long(twin):
        return None
    return twin
