"""Regression seeds: fixed Hypothesis seeds per model, run in CI with cheap budgets (2 examples x
12 steps each, no database). Unlike the derandomized `ci` profile, whose single stream of
examples changes with any change to the rules, each seed is a separate fixed program family, so
adding one never disturbs the others. Add a seed when a run finds something worth re-running
(the failure output shows it: `@seed(N)`); drop one only with a reason.

Dropped: py_implicit_direct_s1_i1_int32_csr's seed 1 (2026-11-26). That model's one finding is the
pinned divergence python-backend-drops-implicit-state, which its corpus entry and campaign hold;
the seed spent 32 s of every CI run shrinking it again.
"""
from __future__ import annotations

import attrs

SEEDS: dict[str, tuple[int, ...]] = {
    "py_corrid_direct_s1_i1_int32_cserc_u64": (1, 2),
    "py_corrid_direct_s2_i1_fp32_cserc_str": (1,),
    "py_corrid_direct_s2_i1_int32_cserc_i32_bool": (1,),
    "py_corrid_direct_s2_i1_int32_cserc_u64_dec": (1,),
    "py_corrid_direct_s2_i1_int32_cserc_u64_dec_iter3": (1,),
    "py_corrid_direct_s2_i2_int32_csrc_i64": (1,),
    "py_corrid_direct_s4_i2_fp32_csec_u64": (1, 2),
    "py_corrid_oldest_s2_i1_fp32_csec_u32": (1,),
    "py_corrid_oldest_s2_i1_int32_csrc_str": (1,),
    "py_corrid_oldest_s2_i1_int32_cserc_u64_nb": (1,),
    "py_corrid_oldest_s4_i2_int32_cserc_u64_pb2-4_qd2000us": (1, 2),
    "nat_implicit_direct_s1_i1_int32_csr_nb_sb": (1, 2),
    "nat_implicit_direct_s4_i2_fp32_cser_2st": (1, 2),
    "nat_implicit_oldest_s2_i1_int64_cserc_u64_init7": (1, 2),
    "nat_implicit_oldest_s4_i1_fp32_cserc_u32_bool_init7_sb": (1, 2),
    "py_slot_direct_s1_i1_int32_csr": (1, 2),
    "py_slot_direct_s2_i2_fp32_cser": (1, 2),
    "py_slot_direct_s4_i1_int32_cserc_u64": (1, 2),
    "py_slot_oldest_s1_i1_int32_cser_ens": (1, 2),
    "py_slot_oldest_s1_i2_int32_csr": (1, 2),
}
EXAMPLES = 2
STEPS = 12


@attrs.frozen
class SeedCase:
    model: str
    seed: int

    @property
    def id(self) -> str:
        return f"{self.model}-seed{self.seed}"


def cases(models=None) -> list[SeedCase]:
    """Every (model, seed), or those of the given models."""
    return [SeedCase(m, s) for m, seeds in SEEDS.items() if models is None or m in models for s in seeds]
