"""Model repositories of stateful accumulator models for Triton's sequence batcher."""
from .config import model_config, parse, render
from .repository import write_model, write_repository
from .variants import DEFAULT_IDLE_US, Variant, python_variants

__all__ = ["Variant", "python_variants", "DEFAULT_IDLE_US", "model_config", "render", "parse",
           "write_model", "write_repository"]
