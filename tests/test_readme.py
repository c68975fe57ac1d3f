"""The README's two set-up commands are what CI runs."""

import re
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


def test_ci_runs_the_readme_test_command_before_it_installs_any_framework():
    """Issue 40 item 8: the README's test command runs with the test extra alone, as a newcomer runs it; the tests it
    skipped for an optional package run again once the frameworks are installed."""
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    tests = ci.index(readme_commands()[1])
    installs = [i for i, line in enumerate(ci) if re.search(r"pip install .*\b(jax|torch|dask|scikit-learn)\b", line)]
    assert installs and all(i > tests for i in installs)
    again = [i for i, line in enumerate(ci) if 'DERIVE_ALSO_RUN="$skipped"' in line and "pytest -m slow" in line]
    assert again and again[0] > max(installs)  # they run in the slow tier (tests/conftest.py: DERIVE_ALSO_RUN)


# --- the README matches the tool -------------------------------------------------------------------


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _help(capsys, *args: str) -> str:
    import pytest

    from derive.cli import main

    with pytest.raises(SystemExit):
        main([*args, "--help"])
    return capsys.readouterr().out


def test_the_theorem_table_lists_every_library_theorem_in_order(capsys):
    from derive.cli import main

    assert main(["list"]) == 0
    from derive.library import THEOREM_IDS

    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()]
    # the built-in theorems in `derive list`'s order (earlier tests in this process may have registered others)
    builtin = [theorem_id for theorem_id in listed if theorem_id in THEOREM_IDS]
    table = re.findall(r"^\| `(\w+)` \|", _section("The theorem"), re.M)
    assert table == builtin and len(builtin) == len(THEOREM_IDS) >= 20


def test_the_command_list_covers_every_command_and_only_real_options(capsys):
    block = _section("Command line").split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("#", 1)[0].split() for line in block.splitlines() if line.startswith("derive ")]
    commands = re.search(r"\{([a-z,]+)\}", _help(capsys)).group(1).split(",")
    documented = {words[1] for words in lines if not words[1].startswith("-")}
    assert set(commands) <= documented, f"commands missing from the README: {set(commands) - documented}"
    for words in lines:
        if words[1].startswith("-"):
            continue
        help_text = _help(capsys, *words[1:2 + (words[1] == "export")])
        for flag in (w.strip("[]").split("=")[0] for w in words[2:] if w.strip("[").startswith("--")):
            assert flag in help_text, f"README: derive {words[1]} {flag} is not an option of the command"


def test_the_readme_names_the_four_generated_modules_and_the_estimator():
    from derive.pipeline import BACKENDS

    text = _section("Numeric code")
    for name, _ in BACKENDS.values():
        assert f"`{name}`" in text
    assert "four modules" in text and "OLSAttentionRegressor" in text


def test_the_install_section_uses_a_checkout_and_names_every_extra():
    text = _section("Installing, and the extras")
    pyproject = (ROOT / "pyproject.toml").read_text()
    extras = re.findall(r"^(\w+) = \[", pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0],
                        re.M)
    assert extras and all(f'".[{extra}]"' in text for extra in extras), extras
    assert "pip install ols-transformer" not in (ROOT / "README.md").read_text()


def test_citation_cff_cites_the_package_and_the_paper():
    text = (ROOT / "CITATION.cff").read_text()
    assert text.startswith("cff-version: 1.2.0\n")
    assert re.search(r"^preferred-citation:\n  type: article\n  title: \"Ordinary Least Squares is a Special Case of "
                     r"Transformer\"", text, re.M)
    assert 'value: "arXiv:2604.13656"' in text and "family-names: Tan" in text and "family-names: Zhao" in text
    version = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert re.search(rf"^version: {re.escape(version)}$", text, re.M)
    try:
        import yaml
    except ImportError:  # the text checks above stand
        return
    data = yaml.safe_load(text)
    assert data["type"] == "software" and data["preferred-citation"]["year"] == 2026
