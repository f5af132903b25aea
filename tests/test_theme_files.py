"""Theme files: flat YAML read by hand into Textual themes."""

from pathlib import Path

from mm_tui.theme_files import THEMES_DIR, load_themes, parse_flat_yaml


def test_the_shipped_themes_load() -> None:
    themes = {t.name: t for t in load_themes()}
    assert {"mm-dark", "mm-light"} <= set(themes)
    assert themes["mm-dark"].dark and not themes["mm-light"].dark
    assert themes["mm-light"].background == "#fafafa"
    assert (THEMES_DIR / "mm-dark.yaml").exists()


def test_flat_yaml() -> None:
    text = '# c\nname: x  # trailing\ndark: false\nprimary: "#010203"\n\nbogus line\n'
    assert parse_flat_yaml(text) == {"name": "x", "dark": False, "primary": "#010203"}


def test_a_broken_theme_file_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text("name: good\nprimary: '#123456'\n")
    (tmp_path / "bad.yaml").write_text("name: bad\nprimary: not-a-colour\n")
    assert [t.name for t in load_themes(tmp_path)] == ["good"]
