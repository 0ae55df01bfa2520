"""The install hint names a command that works for this copy (regcomp_lint.errors.install_hint)."""

from __future__ import annotations

from pathlib import Path

from regcomp_lint import errors


def test_from_a_checkout_the_hint_installs_the_checkout():
    root = Path(errors.__file__).resolve().parent.parent
    assert (root / "pyproject.toml").is_file()  # the tests run from a checkout
    hint = errors.install_hint("trace")
    assert hint.startswith("pip install -e ") and hint.endswith(f"{root}[trace]'")


def test_an_installed_copy_names_the_package(tmp_path, monkeypatch):
    package = tmp_path / "site-packages" / "regcomp_lint"
    package.mkdir(parents=True)
    monkeypatch.setattr(errors, "__file__", str(package / "errors.py"))
    assert errors.install_hint("trace") == "pip install 'regcomp-lint[trace]'"
