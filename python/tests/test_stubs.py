"""The type stubs name everything the modules export: a function or
class added without its stub fails here (editors would not complete it)."""

import ast
import inspect
import os

import fex
import fex._fex
import fex.spark

STUBS = os.path.join(os.path.dirname(fex.__file__))


def stub_names(path):
    tree = ast.parse(open(path).read())
    names, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {
                n.name if isinstance(n, ast.FunctionDef) else n.target.id
                for n in node.body
                if isinstance(n, ast.FunctionDef) or (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))
            }
        if isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names, members


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


def test_the_native_module_is_stubbed():
    names, members = stub_names(os.path.join(STUBS, "_fex.pyi"))
    exported = public(fex._fex) | {"_corpus_case"}
    assert exported - names == set()
    for name in exported:
        obj = getattr(fex._fex, name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            missing = public(obj) - members.get(name, set())
            assert not missing, f"{name}: {sorted(missing)} missing from _fex.pyi"


def test_the_spark_module_is_stubbed():
    names, _ = stub_names(os.path.join(STUBS, "spark.pyi"))
    exported = {n for n in public(fex.spark) if inspect.isfunction(getattr(fex.spark, n)) or n.isupper()}
    exported -= {"pickle"}
    assert exported - names == set()
