"""The README's two set-up commands are what CI runs."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_two_commands():
    commands = readme_commands()
    assert len(commands) == 2
    assert "derive prove" in commands[0] or "derive build" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_commands():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in readme_commands():
        assert command in ci
