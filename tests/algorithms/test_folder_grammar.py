"""Every algorithm folder follows RLlib's grammar (the layout of ``ray/rllib/algorithms/<algo>/``).

* ``<algo>/<algo>.py`` holds the config and the ``Algorithm`` (the registry points there);
  ``torch/<algo>_torch_learner.py`` the learner, ``torch/<algo>_torch_rl_module.py`` the
  RL module, ``connectors.py`` (or ``connectors/``) the connector pieces; ``README.md`` and
  an ``__init__.py`` that hands on the public classes. Other modules of a folder are the
  algorithm's own helpers (L-UCBFair's numpy core, R-TD3's evaluation) and define none of
  those classes.
* Helpers shared by several algorithms live in ``algorithms/common/``. A folder imports
  from a sibling folder only classes (to subclass them), never a helper function, and no
  module anywhere imports a private (``_x``) name from another module.
* Every method that overrides a method of an RLlib class carries RLlib's ``@override``.

The checks read the source (``ast``) and import the modules; nothing is built or run.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
import torch

import rllib_fair.algorithms as algorithms_pkg
from rllib_fair.algorithms import ALGORITHMS

torch.set_num_threads(1)

ROOT = Path(algorithms_pkg.__file__).resolve().parent
REPO = ROOT.parents[1]
PACKAGE = "rllib_fair.algorithms"

#: The folder of shared helpers (not an algorithm).
COMMON = "common"


def _folders() -> list[str]:
    return sorted(
        p.name
        for p in ROOT.iterdir()
        if p.is_dir() and (p / "__init__.py").is_file() and p.name != COMMON
    )


FOLDERS = _folders()


def _modules(folder: str) -> list:
    """Every module of one folder, imported (the package first)."""
    pkg = importlib.import_module(f"{PACKAGE}.{folder}")
    out = [pkg]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg.__name__}."):
        out.append(importlib.import_module(info.name))
    return out


def _rllib_bases():
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
    from ray.rllib.connectors.connector_v2 import ConnectorV2
    from ray.rllib.core.learner.learner import Learner
    from ray.rllib.core.rl_module.rl_module import RLModule

    return Algorithm, AlgorithmConfig, ConnectorV2, Learner, RLModule


def expected_home(folder: str, cls: type) -> tuple[str, ...] | None:
    """The modules (relative to the folder) where ``cls`` may be defined; None: anywhere."""
    algorithm, config, connector, learner, module = _rllib_bases()
    if issubclass(cls, (algorithm, config)):
        return (folder,)
    if issubclass(cls, learner):
        return (f"torch.{folder}_torch_learner",)
    if issubclass(cls, module):
        return (f"torch.{folder}_torch_rl_module",)
    if issubclass(cls, connector):
        return ("connectors", "connectors.*")
    return None


# ----------------------------------------------------------------------------- layout


def test_every_registered_algorithm_lives_in_its_folder_file():
    for name, spec in ALGORITHMS.items():
        parts = spec.module.split(".")
        assert parts[:2] == ["rllib_fair", "algorithms"] and len(parts) == 4, (name, spec.module)
        folder = parts[2]
        assert folder in FOLDERS, (name, spec.module)
        assert parts[3] == folder, f"{name}: {spec.module} is not {folder}/{folder}.py"


@pytest.mark.parametrize("folder", FOLDERS)
def test_folder_files(folder):
    path = ROOT / folder
    for name in ("__init__.py", "README.md", f"{folder}.py"):
        assert (path / name).is_file(), f"algorithms/{folder}/ has no {name}"
    torch_dir = path / "torch"
    if torch_dir.is_dir():
        allowed = {"__init__.py", f"{folder}_torch_learner.py", f"{folder}_torch_rl_module.py"}
        extra = {p.name for p in torch_dir.glob("*.py")} - allowed
        assert not extra, f"algorithms/{folder}/torch/ holds {sorted(extra)}; allowed: {allowed}"


@pytest.mark.parametrize("folder", [*FOLDERS, COMMON])
def test_classes_live_where_the_grammar_says(folder):
    algorithm, config, *_ = _rllib_bases()
    wrong = []
    for mod in _modules(folder):
        rel = mod.__name__.removeprefix(f"{PACKAGE}.{folder}").lstrip(".") or "__init__"
        for cls in vars(mod).values():
            if not inspect.isclass(cls) or cls.__module__ != mod.__name__:
                continue
            if folder == COMMON:
                home = expected_home("", cls)
                if issubclass(cls, (algorithm, config)):
                    wrong.append(f"{rel}.{cls.__name__}: no config or algorithm in common/")
                elif home is not None and not rel.startswith(home[0].split(".")[0]):
                    wrong.append(f"{rel}.{cls.__name__}: belongs in common/{home[0].split('.')[0]}")
                continue
            home = expected_home(folder, cls)
            if home is not None and not any(
                rel == h or (h.endswith(".*") and rel.startswith(h[:-1])) for h in home
            ):
                wrong.append(f"{folder}/{rel}.py defines {cls.__name__}; its home: {home}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("folder", FOLDERS)
def test_init_hands_on_the_public_classes(folder):
    algorithm, config, *_ = _rllib_bases()
    pkg = importlib.import_module(f"{PACKAGE}.{folder}")
    main = importlib.import_module(f"{PACKAGE}.{folder}.{folder}")
    exported = set(getattr(pkg, "__all__", ()))
    assert exported, f"algorithms/{folder}/__init__.py defines no __all__"
    for name in exported:
        assert getattr(pkg, name) is getattr(main, name), (folder, name)
    public = {
        name
        for name, cls in vars(main).items()
        if inspect.isclass(cls)
        and cls.__module__ == main.__name__
        and issubclass(cls, (algorithm, config))
        and not name.startswith("_")
    }
    assert public <= exported, f"{folder}: not exported: {sorted(public - exported)}"


# ----------------------------------------------------------------------------- imports


def import_violations(source: str, module: str) -> list[str]:
    """Imports of ``module``'s source that break the folder rules (see the module docstring).

    Args:
        source: the Python source.
        module: its dotted name (``rllib_fair.algorithms.<folder>...`` or a test's).
    """
    own = module.split(".")
    own_folder = own[2] if own[:2] == ["rllib_fair", "algorithms"] and len(own) > 2 else None
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            out.append(f"{module}: relative import (level {node.level}); use the full path")
            continue
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("rllib_fair"):
            continue
        target = node.module.split(".")
        folder = (
            target[2] if target[:2] == ["rllib_fair", "algorithms"] and len(target) > 2 else None
        )
        for alias in node.names:
            if alias.name.startswith("_") and node.module != module:
                out.append(f"{module}: private {alias.name} from {node.module}")
            if own_folder is None or folder is None or folder == own_folder:
                continue
            if own_folder == COMMON:
                out.append(f"{module}: common/ imports the algorithm folder {folder}/")
            elif folder != COMMON:
                obj = getattr(importlib.import_module(node.module), alias.name, None)
                if obj is None and len(target) == 3:  # a module of the sibling
                    obj = importlib.import_module(f"{node.module}.{alias.name}")
                if not inspect.isclass(obj):
                    out.append(
                        f"{module}: {alias.name} from the sibling folder {folder}/ is not a "
                        "class; shared helpers belong in algorithms/common/"
                    )
    return out


def _sources(top: Path, package: str):
    for path in sorted(top.rglob("*.py")):
        rel = path.relative_to(top).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        yield path, ".".join([package, *parts]) if parts else package


@pytest.mark.parametrize(
    "line, module, expected",
    [
        (
            "from rllib_fair.algorithms.pocar.torch.pocar_torch_learner import _minmax",
            "rllib_fair.algorithms.fppol.torch.fppol_torch_learner",
            "private _minmax",
        ),
        (
            "from rllib_fair.algorithms.pocar.torch.pocar_torch_learner import "
            "regularize_advantages",
            "rllib_fair.algorithms.fppol.torch.fppol_torch_learner",
            "is not a class",
        ),
        (
            "from rllib_fair.algorithms.pocar.pocar import POCARConfig",
            "rllib_fair.algorithms.common.setters",
            "common/ imports the algorithm folder pocar/",
        ),
        ("from .pocar import POCARConfig", "rllib_fair.algorithms.fppol.fppol", "relative"),
        (
            "from rllib_fair.rllib.config import _env_meta",
            "rllib_fair.algorithms.rtd3.rtd3",
            "private _env_meta",
        ),
        (
            "from rllib_fair.algorithms.ppoc.torch.ppoc_torch_learner import _group_mean",
            "tests.algorithms.test_ppoc",
            "private _group_mean",
        ),
    ],
)
def test_import_rules_catch_violations(line, module, expected):
    found = import_violations(line, module)
    assert found and expected in found[0], found


@pytest.mark.parametrize(
    "line, module",
    [
        (
            "from rllib_fair.algorithms.pocar.pocar import POCARConfig",
            "rllib_fair.algorithms.fppol.fppol",
        ),
        (
            "from rllib_fair.algorithms.common.advantages import minmax, pocar_terms",
            "rllib_fair.algorithms.fppol.torch.fppol_torch_learner",
        ),
        ("from rllib_fair.algorithms.lucbfair import lsvi", "rllib_fair.algorithms.lucbfair.core"),
    ],
)
def test_import_rules_allow_classes_common_and_own_folder(line, module):
    assert import_violations(line, module) == []


def test_no_private_or_sibling_helper_imports():
    found = []
    for path, module in _sources(ROOT, PACKAGE):
        found += import_violations(path.read_text(encoding="utf-8"), module)
    for path, module in _sources(REPO / "tests", "tests"):
        found += [
            v
            for v in import_violations(path.read_text(encoding="utf-8"), module)
            if f"from {PACKAGE}" in v and "private" in v
        ]
    assert not found, "\n".join(found)


# ----------------------------------------------------------------------------- @override


def _rllib_owner(cls: type, name: str) -> type | None:
    """The first base of ``cls`` from RLlib that defines ``name``, else None."""
    for base in cls.__mro__[1:]:
        if base.__module__.startswith("ray.rllib") and name in vars(base):
            return base
    return None


def _decorated_with_override(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        call = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(call, ast.Name) and call.id == "override":
            return True
    return False


@pytest.mark.parametrize("folder", [*FOLDERS, COMMON])
def test_every_override_of_an_rllib_method_is_marked(folder):
    missing = []
    for mod in _modules(folder):
        tree = ast.parse(inspect.getsource(mod))
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            cls = getattr(mod, node.name, None)
            if not inspect.isclass(cls):
                continue
            for fn in node.body:
                if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("__"):
                    continue
                owner = _rllib_owner(cls, fn.name)
                if owner is not None and not _decorated_with_override(fn):
                    missing.append(f"{mod.__name__}.{node.name}.{fn.name} ({owner.__name__})")
    assert not missing, "without @override:\n" + "\n".join(missing)
