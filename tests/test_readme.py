"""README promises exactly two set-up-to-result commands, and CI runs the test one."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_has_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.+?)\n```", section, re.S)
    assert len(commands) == 2, commands
    main_job, tests = commands
    assert main_job.startswith("python3 -m venv") and "pytest fuzz/" in main_job
    assert "pytest tests/" in tests
    assert tests in (ROOT / ".ci" / "run").read_text()
    assert "redis-server" in tests  # the shared-database test needs it on a fresh machine


def test_readme_shows_a_checked_in_reproducer_as_it_is():
    readme = (ROOT / "README.md").read_text()
    shown = re.search(r"`corpus/(\S+\.py)` reads, in full:\n\n```python\n(.*?)```", readme, re.S)
    assert shown, "README's corpus section shows a reproducer"
    assert (ROOT / "corpus" / shown.group(1)).read_text() == shown.group(2), "README's reproducer is stale"
