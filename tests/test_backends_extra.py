"""The Qdrant client is an optional extra (``pip install '.[qdrant]'``): the demo's requirements do not
name it, and the app and the CLI asked for ``--backend qdrant`` without it each stop in one line that
says how to get it (run in a child process in which ``qdrant_client`` cannot be imported).

Tests: patent_demo/backends.py, patent_demo/ui/serve.py, pyproject.toml
"""

from __future__ import annotations

import subprocess
import sys
import tomllib

from tests.conftest import REPO_ROOT, require_shared

WITHOUT_QDRANT = "import sys; sys.modules['qdrant_client'] = None\n"


def _run(code: str, tmp_path) -> subprocess.CompletedProcess:
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_QDRANT + code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_demo_requirements_leave_qdrant_to_the_extra():
    runtime = (REPO_ROOT / "requirements.txt").read_text()
    assert "qdrant" not in runtime.lower()
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.startswith("qdrant-client==") for r in extras["qdrant"])
    assert "qdrant-client==" in (REPO_ROOT / "requirements-test.txt").read_text()  # its tests run in CI


def test_the_app_refuses_to_start_with_the_install_command(tmp_path):
    out = _run(
        "from patent_demo.ui.serve import main\n"
        f"sys.exit(main(['--corpus', 'generated', '--backend', 'qdrant', '--labels', '{tmp_path}/l.sqlite', "
        f"'--cache-dir', '{tmp_path}/cache', '--no-warmup']))",
        tmp_path,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert "pip install '.[qdrant]'" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_the_cli_stops_with_the_install_command(tmp_path):
    from patent_demo.cli.main import main as cli

    redbook = require_shared("impact_design_patent_samples/patents")
    assert (
        cli(
            ["corpus", "build", "--source", "redbook", str(redbook), "--out", str(tmp_path / "rb"), "--quiet"]
        )
        == 0
    )
    out = _run(
        "from patent_demo.cli.main import main\n"
        f"sys.exit(main(['index', 'push', '--corpus', '{tmp_path}/rb', '--cache-dir', '{tmp_path}/c']))",
        tmp_path,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.strip() == (
        "patent-demo index: error: the qdrant backend needs qdrant-client: "
        "pip install '.[qdrant]' (qdrant-client==1.20.0, an optional extra)"
    )
