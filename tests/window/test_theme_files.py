"""Theme files: mm's own as package data, the user's from ~/.config/mm/themes, each checked with
one line naming the file and the key, and what the window makes of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.scripted_model import ScriptedModel
from support.window_helpers import make_app, settle

from mm_tui.core.flat_yaml import is_blank, read_flat_yaml
from mm_tui.window.theme_files import (
    builtin_themes_dir,
    load_themes,
    parse_theme,
    user_themes_dir,
)
from mm_tui.window.transcript.store import NoticeItem


def test_the_shipped_themes_are_package_data_and_load_without_a_warning(tmp_path: Path) -> None:
    loaded = load_themes(user_dir=tmp_path / "none")
    themes = {t.name: t for t in loaded.themes}
    assert set(themes) == {"mm-dark", "mm-light"} and loaded.warnings == []
    assert themes["mm-dark"].dark and not themes["mm-light"].dark
    assert themes["mm-light"].background == "#fafafa"
    assert (builtin_themes_dir() / "mm-dark.yaml").is_file()
    assert Path(str(builtin_themes_dir())).parent == Path(__file__).parents[2] / "mm_tui" / "window"


def test_a_user_theme_with_variables_loads_and_can_replace_a_shipped_one(tmp_path: Path) -> None:
    (tmp_path / "sea.yaml").write_text(
        "# a comment\n"
        "dark: true\n"
        'primary: "#005f87"\n'
        "background: '#001020'\n"
        "luminosity_spread: 0.2\n"
        "variables:\n"
        '  footer-key-foreground: "#5fd7af"\n'
        '  block-cursor-text-style: "bold"\n'
    )
    (tmp_path / "light.yaml").write_text('name: mm-light\nprimary: "#123456"\ndark: false\n')
    loaded = load_themes(user_dir=tmp_path)
    assert loaded.warnings == []
    themes = {t.name: t for t in loaded.themes}
    sea = themes["sea"]  # named after its file
    assert sea.variables == {"footer-key-foreground": "#5fd7af", "block-cursor-text-style": "bold"}
    assert (sea.background, sea.luminosity_spread) == ("#001020", 0.2)
    assert [t.primary for t in loaded.themes if t.name == "mm-light"][-1] == "#123456"


@pytest.mark.parametrize(
    ("text", "key", "reason"),
    [
        ("primary: not-a-colour\n", "primary", "not a colour: 'not-a-colour'"),
        ("primary: '#123456'\nprimray: '#123456'\n", "primray", "unknown key"),
        ("primary: '#123456'\ndark: maybe\n", "dark", "not true or false: 'maybe'"),
        ("primary: 123456\n", "primary", "not a colour (quote it"),
        ("background: '#123456'\n", "primary", "missing"),
        (
            "primary: '#123456'\nvariables: {footer-key-colour: red}\n",
            "variables.footer-key-colour",
            "not a Textual theme variable",
        ),
        ("primary: '#123456'\nvariables: [a, b]\n", "variables", "not a mapping"),
        ("primary: '#123456'\nname: ''\n", "name", "not a name"),
        ("primary: '#123456'\ntext_alpha: lots\n", "text_alpha", "not a number"),
    ],
)
def test_a_wrong_key_leaves_the_file_out_with_one_line_naming_file_and_key(
    tmp_path: Path, text: str, key: str, reason: str
) -> None:
    (tmp_path / "good.yaml").write_text("primary: '#123456'\n")
    (tmp_path / "bad.yaml").write_text(text)
    loaded = load_themes(user_dir=tmp_path)
    assert "good" in {t.name for t in loaded.themes}
    assert "bad" not in {t.name for t in loaded.themes}
    [warning] = loaded.warnings
    assert "\n" not in warning
    assert warning.startswith(f"mm: {tmp_path / 'bad.yaml'}: {key}: {reason}"), warning


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("name: x\nprimary: a: b\n", "not valid YAML at line 2: mapping values"),
        ("- primary\n- '#123456'\n", "not a mapping of theme fields"),
        ("", "not a mapping of theme fields"),
    ],
)
def test_a_file_that_is_not_a_theme_says_so(tmp_path: Path, text: str, reason: str) -> None:
    (tmp_path / "bad.yaml").write_text(text)
    loaded = load_themes(user_dir=tmp_path)
    [warning] = loaded.warnings
    assert warning.startswith(f"mm: {tmp_path / 'bad.yaml'}: {reason}"), warning
    assert "\n" not in warning


def test_a_file_under_the_home_folder_is_named_with_a_tilde(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    folder = tmp_path / ".config" / "mm" / "themes"
    folder.mkdir(parents=True)
    (folder / "x.yaml").write_text("primary: nope\n")
    assert load_themes().warnings == [
        "mm: ~/.config/mm/themes/x.yaml: primary: not a colour: 'nope'"
    ]


def test_the_user_folder_follows_xdg_config_home(tmp_path: Path) -> None:
    home = Path.home()
    assert user_themes_dir({}) == home / ".config" / "mm" / "themes"
    assert user_themes_dir({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "mm" / "themes"
    assert user_themes_dir({"XDG_CONFIG_HOME": "relative"}) == home / ".config" / "mm" / "themes"


def test_parse_theme_names_the_theme_after_its_file_unless_it_says() -> None:
    assert parse_theme("primary: '#010203'\n", "f", default_name="f").name == "f"
    assert parse_theme("name: x\nprimary: '#010203'\n", "f", default_name="f").name == "x"


def _notices(app) -> list[str]:
    return [i.text for i in app.main.transcript.items if isinstance(i, NoticeItem)]


async def test_the_window_warns_of_a_bad_theme_file_and_offers_the_good_ones(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    themes = tmp_path / "xdg" / "mm" / "themes"
    themes.mkdir(parents=True)
    (themes / "sea.yaml").write_text(
        "primary: '#005f87'\nvariables: {footer-key-foreground: red}\n"
    )
    (themes / "broken.yaml").write_text("primary: '#005f87'\nbackgrund: '#000000'\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        [warning] = [n for n in _notices(app) if "broken.yaml" in n]
        assert warning.startswith(f"mm: {themes / 'broken.yaml'}: backgrund: unknown key")
        app.switch_theme("sea")
        await pilot.pause()
        assert app.theme == "sea" and app.theme_variables["footer-key-foreground"] == "red"


async def test_an_unknown_theme_name_says_so_and_starts_in_mm_dark(folder: Path) -> None:
    app = make_app(ScriptedModel(), folder, app_theme="nosuch", theme="nosuch")  # as --theme does
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.theme == "mm-dark"
        [warning] = [n for n in _notices(app) if "nosuch" in n]
        assert warning.startswith("no theme named nosuch — themes: ")
        assert "mm-light" in warning


FLAT_SAMPLES = [
    *(f.read_text() for f in builtin_themes_dir().iterdir() if f.name.endswith(".yaml")),
    'name: x  # trailing\ndark: false\nprimary: "#010203"\n\n   # indented comment\n',
    "primary: '#010203'\nprimary: '#040506'\n",  # the last one wins, as in PyYAML
    "dark: true \nname: a.b-c_d\n",
    "maxOutput: 20000\npreviewLines: 0  # none\n",
    "baseUrl: http://localhost:11434/v1  # Ollama\nmodel: qwen3:8b\n",
]
NOT_FLAT_SAMPLES = [
    "primary: '#010203'\nvariables:\n  footer-key-foreground: red\n",
    "dark: yes\n",  # YAML 1.1's true
    "model: a: b\n",  # a mapping in a value: PyYAML's error
    "model: a:\n",
    "name: Null\n",
    "on: '#010203'\n",
    "luminosity_spread: 0.2\n",
    "primary:\t'#010203'\n",
    "\ufeffprimary: '#010203'\n",
    "primary: 'it''s'\n",
    "n: 007\n",  # YAML 1.1's octal
    "n: 1_000\n",
    "n: -5\n",
    "n: 0x1f\n",
    "n: 12:30\n",  # YAML 1.1's sexagesimal
    'primary: "a\\tb"\n',
    "",
]


@pytest.mark.parametrize("text", FLAT_SAMPLES)
def test_flat_files_are_read_as_pyyaml_reads_them(text: str) -> None:
    import yaml

    assert read_flat_yaml(text) is not None
    assert read_flat_yaml(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", NOT_FLAT_SAMPLES)
def test_other_files_are_left_to_pyyaml(text: str) -> None:
    assert read_flat_yaml(text) is None


def test_a_key_given_twice_is_left_to_pyyaml_when_asked() -> None:
    """A config file's reader refuses a key given twice (config/files.py): PyYAML says where."""
    assert read_flat_yaml("a: 1\na: 2\n") == {"a": 2}
    assert read_flat_yaml("a: 1\na: 2\n", unique=True) is None


_KEYS = ["name", "dark", "primary", "on", "No", "x_y", "é", "_a", "a-b", "1"]
_SEPARATORS = [": ", ":  ", ":\t", ":", ": \t"]
_VALUES = ["true", "false", "yes", "True", "Null", "~", "mm-dark", "a.b", "0", "1.5", "é", "-a"]
_VALUES += ["20000", "007", "1_000", "+5", "-5", "0x1f", "12:30", "1e5", "190:20:30", "0b1"]
_VALUES += ["a b", "a  b ", "Skill: x", "a {b} [c] *d* &e !f", "a-b_c %d @e `f`", "y", "n", "On"]
_VALUES += ["http://localhost:11434/v1", "a:b", "a:", "a: b", "a::b", "a:#b", "a:'b", "a:\tb"]
_VALUES += ["http://h:1/v1#x", "h:1 # c:", "No:x", "a:b:c", "a :b"]
_VALUES += [
    "'#010203'",
    '"#010203"',
    "'a''b'",
    '"a\\tb"',
    "'x # y'",
    '"\ufeff"',
    "'\x85'",
    "'\x07'",
]
_ENDS = ["", " ", "  # c", "\t# c", "#c", " #\x85", "\t"]
_LINE = st.one_of(
    st.tuples(*(st.sampled_from(choices) for choices in (_KEYS, _SEPARATORS, _VALUES, _ENDS))).map(
        "".join
    ),
    st.sampled_from(["", "  ", "# comment", "  # indented", "\t", "---", "  primary: '#010203'"]),
)
_FILES = st.tuples(
    st.sampled_from(["", "\ufeff"]),
    st.lists(_LINE, max_size=3),
    st.sampled_from(["\n", "\r\n", "\r", "\x85", "\u2028"]),
).map(lambda parts: parts[0] + parts[2].join(parts[1]))


@settings(max_examples=1000, deadline=None)
@given(_FILES)
def test_whatever_the_flat_reader_reads_pyyaml_reads_the_same(text: str) -> None:
    import yaml

    flat = read_flat_yaml(text)
    if flat is not None:
        assert flat == yaml.safe_load(text)
    if is_blank(text):  # nothing, as a config file reads it (config/files.py)
        assert yaml.safe_load(text) is None
