"""No module outside ``rllib_fair/accel/`` touches a private name RLlib defines.

RLlib's private names change between Ray releases without notice; the speed layer that
needs them lives in one subpackage behind a Ray-version gate (``rllib_fair.accel.gate``).
This test keeps it that way. The rule, kept simple:

* **RLlib's private names** are found by parsing the installed ``ray/rllib`` sources
  with ``ast``: every ``def _x`` and every ``self._x = ...`` (``_x`` with a leading
  underscore, not a dunder), globally and per RLlib class (with its class-level fields).
* **A use** in a module of ``rllib_fair`` outside ``accel/``:

  - inside a class ``C``: ``self._x`` (also ``super()._x``, ``getattr(self, "_x")``,
    ``setattr``/``hasattr``/``delattr``) or a method ``def _x``, where an RLlib class in
    ``C``'s MRO (the class imported) defines ``_x``. A class's own names (an env's
    ``self._t``, a learner's ``self._actor_obs``) never count, and neither do names of
    non-RLlib bases (gymnasium's ``self._np_random``);
  - on any other object (``episode._last_added_observation``, ``pipe._device``):
    ``_x`` is one of RLlib's private names and no class of the same module defines it;
  - ``from ray.rllib... import _x``;
  - a string ``"_x"`` that RLlib itself uses as a dict key (its connectors' private
    ``shared_data`` entries): RLlib's keys are the private string constants its sources
    put in ``d["_x"]``, ``d.get/.pop/.setdefault("_x")``, or bind to a module- or
    class-level name that they use as such a key; on our side every string constant
    equal to one counts, wherever it stands (a key, a name bound to it, an ``in`` test).
    A key RLlib builds at run time (an f-string, a concatenation) is not seen.
* **Allowed**: the hooks RLlib's own algorithms override or call
  (:data:`ALLOWED_HOOKS`), and the private methods RLlib marks
  ``@OverrideToImplementCustomLogic`` (its sign that subclasses may override them).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from functools import cache, lru_cache
from pathlib import Path

import pytest
import ray.rllib

import rllib_fair

RLLIB_ROOT = Path(ray.rllib.__file__).resolve().parent
PACKAGE_ROOT = Path(rllib_fair.__file__).resolve().parent
ACCEL_ROOT = PACKAGE_ROOT / "accel"

#: The private hooks RLlib's own algorithms override or use: the learner connector in
#: a learner's ``build()``, the module's forward passes, the config's model-config
#: additions and PPO's KL-coefficient update.
ALLOWED_HOOKS = frozenset(
    {
        "_learner_connector",
        "_forward",
        "_forward_train",
        "_forward_inference",
        "_forward_exploration",
        "_model_config_auto_includes",
        "_update_module_kl_coeff",
    }
)

#: RLlib's decorators that mark a method as meant for overriding.
_OVERRIDE_MARKS = {
    "OverrideToImplementCustomLogic",
    "OverrideToImplementCustomLogic_CallToSuperRecommended",
}

_ATTR_FUNCS = {"getattr", "setattr", "hasattr", "delattr"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _self_assigned(func: ast.AST) -> set[str]:
    """``self._x`` targets of (annotated, augmented) assignments inside one function."""
    out = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for sub in ast.walk(target):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                    and _private(sub.attr)
                ):
                    out.add(sub.attr)
    return out


def _class_defined(cls: ast.ClassDef) -> set[str]:
    """Private names a class body defines: methods, ``self._x`` and class-level fields."""
    out = set()
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _private(item.name):
                out.add(item.name)
            out |= _self_assigned(item)
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            out |= {t.id for t in targets if isinstance(t, ast.Name) and _private(t.id)}
    return out


def _decorator_names(func) -> set[str]:
    out = set()
    for dec in func.decorator_list:
        node = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.Name):
            out.add(node.id)
    return out


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


@lru_cache(maxsize=1)
def rllib_private_names():
    """(all private names, per RLlib class (module, name) its own, the marked hooks)."""
    names: set[str] = set()
    marked: set[str] = set()
    per_class: dict[tuple[str, str], frozenset[str]] = {}
    for path in RLLIB_ROOT.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = _module_name(path, RLLIB_ROOT, "ray.rllib")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if _private(node.name):
                    names.add(node.name)
                    if _decorator_names(node) & _OVERRIDE_MARKS:
                        marked.add(node.name)
                names |= _self_assigned(node)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                per_class[(module, node.name)] = frozenset(_class_defined(node))
    return frozenset(names), per_class, frozenset(marked)


_KEY_METHODS = {"get", "pop", "setdefault"}


def _key_node(node: ast.AST) -> ast.AST | None:
    """The key expression where ``node`` reads or writes a dict (``d[k]``, ``d.get(k)``)."""
    if isinstance(node, ast.Subscript):
        return node.slice
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _KEY_METHODS
        and node.args
    ):
        return node.args[0]
    return None


def _private_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _private(node.value):
        return node.value
    return None


def _bound_private_strings(tree: ast.Module) -> dict[str, str]:
    """Module- and class-level ``NAME = "_x"`` bindings of a module."""
    out = {}
    bodies = [tree.body] + [n.body for n in tree.body if isinstance(n, ast.ClassDef)]
    for body in bodies:
        for item in body:
            if isinstance(item, ast.Assign) and _private_str(item.value):
                for target in item.targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = item.value.value
    return out


@lru_cache(maxsize=1)
def rllib_private_keys() -> frozenset[str]:
    """Private string keys RLlib's sources read or write (``shared_data["_x"]``), as a
    literal or through a name bound to one (``KEY = "_x"``; ``d[KEY]``, ``d[cls.KEY]``)."""
    keys = set()
    for path in RLLIB_ROOT.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = _bound_private_strings(tree)
        for node in ast.walk(tree):
            key = _key_node(node)
            if _private_str(key):
                keys.add(key.value)
            elif isinstance(key, ast.Name) and key.id in bound:
                keys.add(bound[key.id])
            elif isinstance(key, ast.Attribute) and key.attr in bound:
                keys.add(bound[key.attr])
    return frozenset(keys)


@cache
def _own_defined(cls: type) -> frozenset[str]:
    """Private names a non-RLlib class defines itself (its source, and its ``vars``)."""
    names = {n for n in vars(cls) if _private(n)}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return frozenset(names)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names |= _class_defined(node)
    return frozenset(names)


def _family(cls: type) -> list[type]:
    """``cls`` and every subclass of it defined so far."""
    out, todo = [], [cls]
    while todo:
        k = todo.pop()
        if k not in out:
            out.append(k)
            todo += k.__subclasses__()
    return out


def self_use_flagged(cls: type, name: str) -> bool:
    """Whether ``self.<name>`` in a method of ``cls`` uses a private RLlib name.

    Yes where an RLlib class in the MRO of ``cls`` or of a subclass of it (a mixin is
    checked with the classes it is combined with) defines it, or where it is one of
    RLlib's names that no class in those MROs defines (a mixin reaching into an RLlib
    class it is combined with elsewhere).
    """
    names, per_class, _ = rllib_private_names()
    own = False
    for k in _family(cls):
        for base in inspect.getmro(k):
            if base.__module__.startswith("ray.rllib"):
                if name in vars(base) or name in per_class.get(
                    (base.__module__, base.__name__), ()
                ):
                    return True
            elif name in _own_defined(base):
                own = True
    return not own and name in names


def _find_class(module, qualname: list[str]):
    obj = module
    for part in qualname:
        obj = getattr(obj, part, None)
    return obj if inspect.isclass(obj) else None


class _Uses(ast.NodeVisitor):
    """Collects (line, name, class or None) of private uses; the class for ``self`` uses."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.found: list[tuple[int, str, tuple | None]] = []
        self.keys: list[tuple[int, str]] = []

    def visit_Constant(self, node: ast.Constant) -> None:
        key = _private_str(node)
        if key is not None:
            self.keys.append((node.lineno, key))

    def _here(self):
        return tuple(self.stack) if self.stack else None

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.stack.append(node.name)
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(item.name):
                self.found.append((item.lineno, item.name, self._here()))
        self.generic_visit(node)
        self.stack.pop()

    @staticmethod
    def _on_self(value: ast.AST) -> bool:
        if isinstance(value, ast.Name) and value.id in ("self", "cls"):
            return True
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "super"
        )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _private(node.attr):
            owner = self._here() if self._on_self(node.value) else None
            self.found.append((node.lineno, node.attr, owner))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (
            isinstance(node.func, ast.Name)
            and node.func.id in _ATTR_FUNCS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            owner = self._here() if self._on_self(node.args[0]) else None
            self.found.append((node.lineno, node.args[1].value, owner))
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if (node.module or "").startswith("ray.rllib"):
            for alias in node.names:
                if _private(alias.name):
                    self.found.append((node.lineno, alias.name, ("<import>",)))


def violations_in(source: str, module_name: str) -> list[tuple[int, str]]:
    """(line, name) of every use of an RLlib private name against the rule."""
    names, _, marked = rllib_private_names()
    tree = ast.parse(source)
    visitor = _Uses()
    visitor.visit(tree)
    keys = [(line, key) for line, key in visitor.keys if key in rllib_private_keys()]
    candidates = [
        (line, name, owner)
        for line, name, owner in visitor.found
        if name in names and name not in ALLOWED_HOOKS and name not in marked
    ]
    if not candidates:
        return keys
    module = importlib.import_module(module_name)
    defined_here = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            defined_here |= _class_defined(node)
    out = []
    for line, name, owner in candidates:
        if owner == ("<import>",):
            out.append((line, name))
        elif owner is not None:
            cls = _find_class(module, list(owner))
            if cls is None or self_use_flagged(cls, name):
                out.append((line, name))
        elif name not in defined_here:
            out.append((line, name))
    return sorted(out + keys)


def package_modules_outside_accel() -> list[Path]:
    """Every module of the package outside ``accel/`` (``__main__`` entry points aside)."""
    return sorted(
        p
        for p in PACKAGE_ROOT.rglob("*.py")
        if ACCEL_ROOT not in p.parents and p.name != "__main__.py"
    )


def test_rllib_private_names_are_collected():
    names, per_class, marked = rllib_private_names()
    assert {"_sample", "_ongoing_episodes", "_temp_losses"} <= names
    assert "_module" in per_class[("ray.rllib.core.learner.learner", "Learner")]
    assert "_make_modules_ddp_if_necessary" in marked
    assert "_added_loss_mask_for_valid_episode_ts" in rllib_private_keys()
    assert not any(n.startswith("__") and n.endswith("__") for n in names)


def test_no_private_rllib_name_outside_accel():
    paths = package_modules_outside_accel()
    for path in paths:  # every subclass of a mixin exists before any is checked
        importlib.import_module(_module_name(path, PACKAGE_ROOT, "rllib_fair"))
    found = []
    for path in paths:
        module = _module_name(path, PACKAGE_ROOT, "rllib_fair")
        rel = path.relative_to(PACKAGE_ROOT.parent)
        found += [
            f"{rel}:{line}: {name}"
            for line, name in violations_in(path.read_text(encoding="utf-8"), module)
        ]
    assert not found, (
        f"{len(found)} use(s) of RLlib-private names outside rllib_fair/accel/ "
        "(move them into accel/ or use a public API):\n" + "\n".join(found)
    )


_PROBE = """
from ray.rllib.core.learner.learner import Learner
from ray.rllib.core.learner.torch.torch_learner import TorchLearner


class ProbeLearner(TorchLearner):
    def build(self):
        super().build()
        self._probe_count = 0                 # ours: no RLlib class defines it
        self._learner_connector.prepend(None)  # an allowed hook
        return self._module                   # RLlib's Learner assigns it

    def _make_modules_ddp_if_necessary(self):  # marked for overriding by RLlib
        pass

    def _get_clip_function(self):              # RLlib's private method, overridden
        return getattr(self, "_params")        # RLlib's, through getattr


class ProbeMixin:
    def update(self):
        return self._metrics_num_env_steps_sampled  # RLlib's, not defined by the mixin


class ProbeEnv:
    def __init__(self):
        self._ongoing_episodes = []           # an RLlib name, but this class is ours
        self._np_random = None

    def step(self, episode):
        return episode._last_added_observation, self._ongoing_episodes


FLAG = "_added_loss_mask_for_valid_episode_ts"  # RLlib's key, bound to a name


def connector_piece(shared_data, mine):
    mine["_own_key"] = shared_data.get("_added_loss_mask_for_valid_episode_ts")  # RLlib's key
    if "_added_loss_mask_for_valid_episode_ts" in shared_data or FLAG in mine:  # an in test
        pass
    return mine.get("_own_key")                # a private key RLlib never uses
"""


def test_rule_flags_rllib_privates_and_spares_own_names(tmp_path, monkeypatch):
    """The checker finds RLlib's private names and spares own ones and allowed hooks."""
    (tmp_path / "rllib_fair_probe_mod.py").write_text(_PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))
    found = violations_in(_PROBE, "rllib_fair_probe_mod")
    assert sorted(name for _, name in found) == [
        "_added_loss_mask_for_valid_episode_ts",  # the name binding
        "_added_loss_mask_for_valid_episode_ts",  # the .get
        "_added_loss_mask_for_valid_episode_ts",  # the in test
        "_get_clip_function",
        "_last_added_observation",
        "_metrics_num_env_steps_sampled",
        "_module",
        "_params",
    ]


@pytest.mark.parametrize("name", sorted(ALLOWED_HOOKS))
def test_allowed_hooks_are_rllib_names(name):
    """Each allowed hook exists in this Ray's RLlib (a stale entry would hide nothing)."""
    names, _, _ = rllib_private_names()
    assert name in names
