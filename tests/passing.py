"""What a passing campaign on a correct model is, for the tests that run one."""


def passed(result, error) -> bool:
    """No finding and not cut short: every failure beside the point (ModelResult.beside_the_point:
    a known divergence fuzzed on past, or a race of the build), so its verdict is "pass" or
    "expected divergence"."""
    return error is None and not result.interrupted and all(result.beside_the_point(f) for f in result.failures)
