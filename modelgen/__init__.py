"""Model repositories of stateful accumulator models for Triton's sequence batcher."""
from .config import model_config, parse, render
from .repository import write_model, write_repository
from .variants import (DEFAULT_IDLE_US, IMPLICIT_BACKENDS, Variant, default_variants, implicit_variants, left_out_on,
                       loadable_on, native_variants, python_variants, slow_variants, split_variants)

__all__ = ["Variant", "python_variants", "native_variants", "default_variants", "slow_variants", "split_variants",
           "implicit_variants",
           "loadable_on", "left_out_on", "IMPLICIT_BACKENDS", "DEFAULT_IDLE_US", "model_config", "render", "parse",
           "write_model", "write_repository"]
