"""The type stubs (`_switchyard.pyi`) and docstrings cover everything public: every name
of the native module and every member of its classes has a stub (and no stub names
something that does not exist), the stubs' parameters are the functions' own, and every
public function, class and method has a docstring."""

import ast
import inspect
from pathlib import Path

import switchyard
from switchyard import _switchyard

STUB = Path(switchyard.__file__).with_name("_switchyard.pyi")


def stubs():
    """{name: node} of the stub's top-level functions and classes."""
    tree = ast.parse(STUB.read_text())
    return {
        n.name: n
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def native_names():
    return {n for n in dir(_switchyard) if not n.startswith("__")}


def members(cls):
    """The class's own public members (those `object` has aside)."""
    return {
        n
        for n in dir(cls)
        if not (n.startswith("__") and n.endswith("__")) and not hasattr(object, n)
    }


def stub_members(node):
    return {
        n.name
        for n in node.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and not (n.name.startswith("__") and n.name.endswith("__"))
    }


def stub_params(node, keywords=True):
    """The stub's named parameters (`self`, `*args`, `**kwargs` aside; keyword-only ones
    too unless `keywords`)."""
    a = node.args
    names = [p.arg for p in a.posonlyargs + a.args + (a.kwonlyargs if keywords else [])]
    return [n for n in names if n not in ("self", "cls")]


def real_params(obj):
    """The function's named parameters, from the signature PyO3 gives it, and whether it
    takes `**kwargs` (`None` when it gives none, as for properties)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    names = [
        n
        for n, p in sig.parameters.items()
        if p.kind not in skip and n not in ("self", "cls", "$self", "$cls")
    ]
    kwargs = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    return names, kwargs


def test_every_native_name_has_a_stub_and_every_stub_a_name():
    stubbed = set(stubs())
    assert native_names() - stubbed == set(), "native names without a stub"
    assert stubbed - native_names() == set(), "stubs of names the module lacks"


def test_every_class_member_has_a_stub():
    for name, node in stubs().items():
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(_switchyard, name)
        have, stubbed = members(cls), stub_members(node)
        assert have - stubbed == set(), f"{name}: members without a stub"
        assert stubbed - have == set(), f"{name}: stubs of members it lacks"


def test_the_stubs_parameters_are_the_functions():
    checked = 0
    for name, node in stubs().items():
        if isinstance(node, ast.ClassDef):
            cls = getattr(_switchyard, name)
            targets = [
                (f"{name}.{m.name}", getattr(cls, m.name), m)
                for m in node.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name in members(cls)
            ]
        else:
            targets = [(name, getattr(_switchyard, name), node)]
        for label, obj, stub in targets:
            real = real_params(obj)
            if real is None:
                continue
            params, kwargs = real
            if kwargs and not stub.args.kwarg:
                # Keyword options the function reads from `**kwargs` itself (`complete`'s
                # `system`, `max_tokens`…): the stub names them keyword-only.
                assert stub_params(stub, keywords=False) == params, label
            else:
                assert stub_params(stub) == params, label
            checked += 1
    assert checked >= 20, checked


def public_objects():
    """Every public function, class and method of the package, by dotted name."""
    modules = [switchyard, switchyard.backends, switchyard.log, switchyard.errors, _switchyard]
    seen = {}
    for module in modules:
        for name in getattr(module, "__all__", None) or dir(module):
            if name.startswith("_") and name != "_bench_rust_complete":
                continue
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not callable(obj):
                continue
            seen[f"{module.__name__}.{name}"] = obj
            if inspect.isclass(obj) and module in (_switchyard, switchyard.log):
                for m in members(obj):
                    seen[f"{module.__name__}.{name}.{m}"] = getattr(obj, m)
    return seen


def test_everything_public_has_a_docstring():
    missing = [name for name, obj in public_objects().items() if not (obj.__doc__ or "").strip()]
    assert missing == []
