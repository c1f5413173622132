"""An installed wheel carries its migrations: no checkout is needed to create or upgrade stores."""

from __future__ import annotations

import json
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT
from tests.legacy_stores import build_legacy_store, snapshot


def _run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed; returns its bin directory."""
    work = tmp_path_factory.mktemp("wheel")
    built = _run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "-w", work / "dist", REPO_ROOT, cwd=work,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    wheel = next((work / "dist").glob("lantern-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "lantern/_alembic/env.py" in names
    assert any(n.startswith("lantern/_alembic/versions/0001_") for n in names)
    # The embedding model's tokenizer travels with its license and notice.
    model_data = "lantern/embeddings/data/all-MiniLM-L6-v2/"
    assert {f"{model_data}{n}" for n in ("tokenizer.json", "LICENSE", "NOTICE")} <= set(names)
    # The web view's templates and assets are package data: no CDN, nothing fetched.
    web = {"templates/base.html", "templates/overview.html", "static/lantern.css"}
    assert {f"lantern/ui/{n}" for n in web} <= set(names)
    metadata = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "[lantern.embedding_providers]" in zipfile.ZipFile(wheel).read(metadata).decode()
    # Type checkers read the package's annotations; the licence travels with it; development
    # tools are dependency groups, never published as an extra.
    assert "lantern/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    core = next(n for n in names if n.endswith(".dist-info/METADATA"))
    extras = {
        line.split(":", 1)[1].strip()
        for line in zipfile.ZipFile(wheel).read(core).decode().splitlines()
        if line.startswith("Provides-Extra:")
    }
    assert extras == {"all", "embed", "index", "langgraph", "mcp", "postgres", "ui"}
    venv = work / "venv"
    created = _run(sys.executable, "-m", "venv", venv, cwd=work)
    assert created.returncode == 0, created.stderr
    pip = _run(venv / "bin" / "pip", "install", "--no-deps", "--no-index", wheel, cwd=work)
    assert pip.returncode == 0, pip.stderr
    # Dependencies (SQLAlchemy, Alembic, Click) come from this environment; Lantern itself
    # only from the wheel: a path added by a .pth file does not run that directory's .pth files,
    # so the editable install of the checkout stays invisible.
    purelib = next((venv / "lib").glob("python*/site-packages"))
    (purelib / "_test_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return venv / "bin"


def test_installed_lantern_comes_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    located = _run(
        installed / "python",
        "-c",
        "import lantern, lantern.store.migrations as m; print(lantern.__file__); "
        "print(m.script_location())",
        cwd=tmp_path,
    )
    assert located.returncode == 0, located.stderr
    module_file, scripts = located.stdout.split()
    assert "site-packages" in module_file and str(REPO_ROOT) not in module_file
    assert scripts.endswith("site-packages/lantern/_alembic")


def test_installed_lantern_creates_and_upgrades_stores(installed: Path, tmp_path: Path) -> None:
    lantern = installed / "lantern"
    new = tmp_path / "new.db"
    added = _run(
        lantern, "--db", new, "memory", "add", "--kind", "fact", "--json", "x", cwd=tmp_path
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["content"] == "x"

    legacy = tmp_path / "legacy.db"
    build_legacy_store(legacy, 2)
    before = snapshot(legacy)
    refused = _run(lantern, "--db", legacy, "memory", "list", cwd=tmp_path)
    assert refused.returncode == 5
    upgraded = _run(lantern, "--db", legacy, "db", "upgrade", "--json", cwd=tmp_path)
    assert upgraded.returncode == 0, upgraded.stderr
    assert json.loads(upgraded.stdout)["upgraded"] is True
    assert snapshot(legacy) == before
    listed = _run(lantern, "--db", legacy, "memory", "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []


def test_installed_lantern_embeds_with_its_packaged_tokenizer(
    installed: Path, tmp_path: Path
) -> None:
    script = (
        "import lantern.embeddings.minilm as m\n"
        "from lantern.embeddings.registry import resolve_provider\n"
        "provider = resolve_provider()\n"
        "print(m.__file__, provider.model, provider.embed(['hello']).shape)\n"
    )
    ran = _run(installed / "python", "-c", script, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    module_file, model, shape = ran.stdout.strip().split(maxsplit=2)
    assert "site-packages" in module_file and str(REPO_ROOT) not in module_file
    assert model.startswith("all-MiniLM-L6-v2-int8@")
    assert shape == "(1, 384)"


def test_installed_lantern_serves_the_web_view_from_the_wheel(
    installed: Path, tmp_path: Path
) -> None:
    import urllib.request

    store = tmp_path / "s.db"
    added = _run(installed / "lantern", "--db", store, "memory", "add", "--kind", "fact", "x",
                 cwd=tmp_path)  # fmt: skip
    assert added.returncode == 0, added.stderr
    process = subprocess.Popen(
        [str(installed / "lantern"), "--db", str(store), "ui", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        base, _, token = url.partition("/?token=")
        assert base.startswith("http://127.0.0.1:"), url
        for path, kind in (("/", "text/html"), ("/static/lantern.css", "text/css")):
            request = urllib.request.Request(
                base + path, headers={"Authorization": f"Bearer {token}"}
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.status == 200
                assert response.headers["content-type"].startswith(kind)
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_installed_lantern_says_to_install_an_extra_from_its_wheel(
    installed: Path, tmp_path: Path
) -> None:
    """The index's `lantern` is another project: the hint installs the extra from the wheel
    this Lantern was installed from, as pip recorded it."""
    [wheel] = (installed.parent.parent / "dist").glob("lantern-*.whl")
    script = (
        "import sys; sys.modules['starlette'] = None; "
        "sys.argv = ['lantern', '--db', sys.argv[1], 'ui']; "
        "from lantern.cli import main; main()"
    )
    ran = _run(installed / "python", "-c", script, tmp_path / "s.db", cwd=tmp_path)
    assert ran.returncode == 1
    assert ran.stderr.splitlines() == [
        f"Error: the web view needs starlette (the ui extra): pip install '{wheel}[ui]'"
    ]
