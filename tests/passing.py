"""What a passing campaign on a correct model is, for the tests that run one."""
from fuzz.checker.divergences import by_key


def beside_the_point(failure, result) -> bool:
    """A known divergence the campaign took as built and fuzzed on past, or a race of the build a
    correct model may lose now and then (start-overtakes-its-ids-end, on a model that keeps its
    state by CORRID), met in the campaign's last phase: neither is a finding."""
    key = failure.expected_divergence
    return key is not None and (key in result.accepted or by_key(key).race)


def passed(result, error) -> bool:
    """No finding and not cut short: every failure beside the point, so its verdict is "pass" or
    "expected divergence"."""
    return error is None and not result.interrupted and all(beside_the_point(f, result) for f in result.failures)
