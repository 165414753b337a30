"""lakemeta as a package: a wheel that installs in a clean venv with the Spark machines' pinned set alone
(no Airflow), whose dependencies are what the library imports, Airflow's only with the extra `airflow`; the
lock matches pyproject.toml and every pinned requirement set is its export."""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

from ...production import REPO

LIBRARY = REPO / "lib" / "lakemeta"
# Only where the DAGs run: the tasks' operators, their settings and lineage, and the demo's DAG runs.
AIRFLOW_SIDE = ("orchestration/spark_tasks.py", "orchestration/dag_settings.py", "orchestration/lineage.py",
                "demo/dag_runs.py")  # fmt: skip
# Only where the catalog is exported to DataHub (extra `datahub`), imported when an export runs.
DATAHUB_SIDE = ("export/datahub.py",)


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def distribution_names(requirements: list[str]) -> set[str]:
    return {
        requirement.split(";")[0].split("[")[0].strip().lower().replace("_", "-")
        for requirement in requirements
    }


def imported_distributions(path: Path) -> dict[str, set[str]]:
    """Per top-level import of the module at ``path`` (other than lakemeta and the standard library), the
    installed distributions that provide it (``pyspark``: pyspark and pyspark-client)."""
    providers = importlib.metadata.packages_distributions()
    found = {}
    for node in ast.walk(ast.parse(path.read_text())):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for top in {name.split(".")[0] for name in names} - {"lakemeta"}:
            if top in providers:
                found[top] = {distribution.lower().replace("_", "-") for distribution in providers[top]}
    return found


def test_the_library_imports_its_dependencies_and_airflow_only_on_the_airflow_side() -> None:
    runtime = distribution_names(project()["dependencies"])
    airflow = distribution_names(project()["optional-dependencies"]["airflow"])
    for path in sorted(LIBRARY.rglob("*.py")):
        relative = path.relative_to(LIBRARY).as_posix()
        for module, provided_by in imported_distributions(path).items():
            if module == "airflow":  # apache-airflow's core and task SDK provide it
                assert relative in AIRFLOW_SIDE, f"{relative} imports Airflow, which executors do not install"
                continue
            allowed = runtime | airflow if relative in AIRFLOW_SIDE else runtime
            if relative in DATAHUB_SIDE:
                allowed |= distribution_names(project()["optional-dependencies"]["datahub"])
            assert provided_by & allowed, (
                f"{relative} imports {module} ({sorted(provided_by)}): no dependency"
            )


def test_the_lock_matches_the_project_and_the_requirement_sets_are_its_exports() -> None:
    checked = subprocess.run(
        ["bash", str(REPO / "infra" / "export-requirements.sh"), "--check"], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_wheel_installs_with_the_spark_machines_set_alone_and_the_library_imports(tmp_path: Path) -> None:
    """What a Spark machine installs: the wheel and infra/production/requirements-spark.txt, offline from
    the packages set-up cached. Every module of the library but the Airflow side imports; Airflow is not
    there."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
         str(REPO)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("lakemeta-*.whl")
    uv = str(Path(sys.executable).with_name("uv"))
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(tmp_path / "clean")], check=True)
    python = tmp_path / "clean" / "bin" / "python"
    # linked to uv's cache, not copied: 1.5 GB and half a minute otherwise; the venv lives for this test only
    subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(python), "--offline", "--link-mode=symlink",
         "-r", str(REPO / "infra" / "production" / "requirements-spark.txt"), "--no-deps", str(wheel)],
        check=True,
    )  # fmt: skip
    airflow_side = [f"lakemeta.{path.removesuffix('.py').replace('/', '.')}" for path in AIRFLOW_SIDE]
    checked = subprocess.run(
        [str(python), "-c", "import importlib, importlib.util, importlib.metadata as m, pkgutil;"
         "import importlib.resources as r, lakemeta;"
         f"[importlib.import_module(i.name) for i in pkgutil.walk_packages(lakemeta.__path__, 'lakemeta.') "
         f"if i.name not in {airflow_side!r}];"
         "print(lakemeta.__version__, r.files('lakemeta.fks').joinpath('fk_model.json').is_file(), "
         "importlib.util.find_spec('airflow') is None, sorted(m.requires('lakemeta')))"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr[-3000:]
    version, model, no_airflow, requires = checked.stdout.strip().splitlines()[-1].split(" ", 3)
    assert version == project_version() and model == "True" and no_airflow == "True"
    unconditional = [r for r in eval(requires) if "extra ==" not in r]  # our own output
    assert not [r for r in unconditional if r.lower().startswith("apache-airflow")], unconditional
    assert (tmp_path / "clean" / "bin" / "lakemeta").is_file()  # the console script


def project_version() -> str:
    namespace: dict = {}
    exec((LIBRARY / "__init__.py").read_text(), namespace)  # the package's own version line
    return namespace["__version__"]
