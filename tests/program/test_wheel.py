"""The wheel as a person installs it: built from a clean copy of the repository (the files git
tracks or would track: no .venv, no caches), installed in a fresh virtual environment, run from
another folder. Its themes must come from the wheel itself, not from this source tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from support.env import clean_env

import mm_tui

ROOT = Path(__file__).resolve().parents[2]

# Run in the fresh environment: the real `mm --demo --theme mm-light` to the moment its engine is
# attached (the window headless), which then says what it shows and exits.
PROBE = """
import json, sys
import mm_tui.window.app as window

class Probe(window.MMApp):
    def run(self, **_):
        return super().run(headless=True, size=(100, 30))

    def attach(self, started):
        super().attach(started)
        notes = [i.text for i in self.main.transcript.items if type(i).__name__ == "NoticeItem"]
        print(json.dumps({"theme": self.theme, "background": self.current_theme.background,
                          "notes": notes, "themes": sorted(self.available_themes),
                          "package": window.__file__}))
        self.exit(0)

window.MMApp = Probe
import mm_tui.cli as cli
cli._not_a_terminal = lambda: ""  # the window runs headless here: no terminal to ask for
sys.exit(cli.main(["--demo", "--theme", "mm-light"]))
"""


def clean_copy(target: Path) -> Path:
    """The repository's files as a fresh clone of the working tree would have them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@pytest.mark.slow  # a wheel built and installed in a fresh virtual environment: about 15 s
def test_the_wheel_installed_in_a_fresh_venv_runs_with_its_themes(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git repository to make a clean copy of")
    source = clean_copy(tmp_path / "source")
    dist = tmp_path / "dist"
    pip = [sys.executable, "-m", "pip"]
    built = subprocess.run(
        [*pip, "wheel", "-q", "--no-deps", "-w", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = dist.glob("mm_tui-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {"mm_tui/window/themes/mm-dark.yaml", "mm_tui/window/themes/mm-light.yaml"} <= set(names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)

    # A fresh environment holding the wheel alone; its dependencies come from this one's
    # site-packages, named by a .pth line (whose own .pth files, this checkout's editable
    # install among them, Python does not read).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [*pip, "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = clean_env(tmp_path / "home")
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)

    version = subprocess.run(
        [str(venv / "bin" / "mm"), "--version"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert version.stdout == f"mm {mm_tui.__version__}\n", version.stderr

    probe = subprocess.run(
        [str(python), "-c", PROBE],
        cwd=elsewhere,
        env={**env, "TMPDIR": str(tmp_path)},  # the demo's playground
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    shown = json.loads(probe.stdout.strip().splitlines()[-1])
    assert Path(shown["package"]).is_relative_to(venv), shown["package"]  # not this checkout
    assert {"mm-dark", "mm-light"} <= set(shown["themes"])
    assert (shown["theme"], shown["background"]) == ("mm-light", "#fafafa")
    assert not [n for n in shown["notes"] if "theme" in n], shown["notes"]
    assert os.listdir(elsewhere) == []  # nothing written where it ran
