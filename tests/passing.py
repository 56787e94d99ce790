"""What a passing campaign on a correct model is, for the tests that run one."""


def passed(result, error) -> bool:
    """No finding and not cut short: every failure a known divergence the campaign took as built
    and fuzzed on past (a race such as start-overtakes-its-ids-end can come up on any model that
    keeps its state by CORRID, or never), so its verdict is "pass" or "expected divergence"."""
    return error is None and not result.interrupted and \
        all(f.expected_divergence is not None and f.expected_divergence in result.accepted for f in result.failures)
