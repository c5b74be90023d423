"""The public API is typed and documented: the .pyi stub matches the native
module, and every public Python name has a docstring and annotations."""

from __future__ import annotations

import ast
import inspect
import os

import pytest

import gulpdb
import gulpdb.adapters
import gulpdb.fileio
import gulpdb.torch
import gulpdb.utils
from gulpdb import _gulpdb

STUB = os.path.join(os.path.dirname(_gulpdb.__file__), "_gulpdb.pyi")


def stub_tree() -> ast.Module:
    with open(STUB, encoding="utf-8") as f:
        return ast.parse(f.read())


def stub_names():
    tree = stub_tree()
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            members = set()
            if isinstance(node, ast.ClassDef):
                members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            names[node.name] = (node, members)
    return names


def stub_attributes():
    """The module-level annotated attributes of the stub (``codecs: Tuple[str, ...]``)."""
    return {node.target.id for node in stub_tree().body
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}


def test_stub_covers_the_native_module():
    stubbed = stub_names()
    attributes = {n for n in stub_attributes() if not n.startswith("__")}
    native = {n for n in dir(_gulpdb) if not n.startswith("__")}
    assert native == set(stubbed) | attributes
    assert not set(stubbed) & attributes
    assert isinstance(_gulpdb.codecs, tuple) and "jpeg" in _gulpdb.codecs
    for name, (node, members) in stubbed.items():
        assert ast.get_docstring(node), f"{name} has no docstring in the stub"
        if isinstance(node, ast.ClassDef) and not issubclass(getattr(_gulpdb, name), BaseException):
            runtime = {m for m in dir(getattr(_gulpdb, name)) if not m.startswith("_")}
            cls = getattr(_gulpdb, name)
            runtime |= {m for m in ("__len__", "__contains__") if hasattr(cls, m)}
            assert runtime == {m for m in members if not m.startswith("_") or m in runtime}, name
            for member in node.body:
                if isinstance(member, ast.FunctionDef):
                    assert ast.get_docstring(member), f"{name}.{member.name} has no docstring"
                    assert member.returns is not None, f"{name}.{member.name} has no return type"


def test_native_docstrings_at_runtime():
    for name in ("NativeDataset", "NativeWriter", "decode_jpeg", "encode_jpeg", "import_gulpio"):
        assert getattr(_gulpdb, name).__doc__


PUBLIC_MODULES = [gulpdb, gulpdb.fileio, gulpdb.adapters, gulpdb.torch, gulpdb.utils]


def public_callables():
    for module in PUBLIC_MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            module_name = getattr(obj, "__module__", None) or ""
            ours = module_name.startswith("gulpdb") and module_name != "gulpdb"
            if inspect.isclass(obj) and ours:
                yield f"{module.__name__}.{name}", obj
                for member_name, member in vars(obj).items():
                    if member_name.startswith("_") and member_name not in ("__init__",):
                        continue
                    if inspect.isfunction(member) or isinstance(member, property):
                        yield f"{module.__name__}.{name}.{member_name}", member
            elif inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj


@pytest.mark.parametrize(
    "qualified, obj", list(public_callables()), ids=lambda x: x if isinstance(x, str) else ""
)
def test_public_python_api_is_documented_and_typed(qualified, obj):
    if qualified.endswith("__init__"):
        owner = qualified.rsplit(".", 1)[0]
        assert owner  # the class docstring documents the arguments
    else:
        assert inspect.getdoc(obj), f"{qualified} has no docstring"
    function = obj.fget if isinstance(obj, property) else obj
    if inspect.isfunction(function):
        signature = inspect.signature(function)
        for parameter in signature.parameters.values():
            if parameter.name in ("self", "cls") or parameter.kind in (
                parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD
            ):
                continue
            assert parameter.annotation is not inspect.Parameter.empty, (
                f"{qualified}: parameter {parameter.name} has no type"
            )
        assert signature.return_annotation is not inspect.Signature.empty, (
            f"{qualified} has no return type"
        )


def test_reprs(small_dataset, gulpio_copy):
    ds = gulpdb.Dataset(small_dataset.path)
    assert repr(ds).startswith("<gulpdb.Dataset")
    gd = gulpdb.GulpDirectory(gulpio_copy("gulpio2_csv_jpeg"), quiet=True)
    assert repr(gd).startswith("<gulpdb.GulpDirectory") and "22 videos" in repr(gd)
    chunk = next(iter(gd))
    assert "GulpChunk" in repr(chunk)
    assert "ids" in repr(chunk.meta_dict) and "ids" in repr(gd.merged_meta_dict)
    assert "ChunkInfo" in repr(ds.chunks()[0]) and "DatasetStats" in repr(ds.stats())


def test_top_level_exports_every_gulpio2_name_of_fileio():
    assert set(gulpdb.fileio.__all__) <= set(gulpdb.__all__)
    names: dict = {}
    exec("from gulpdb import *", names)
    for name in gulpdb.fileio.__all__:
        assert names[name] is getattr(gulpdb.fileio, name)


def test_gulpio2_names_exist():
    import gulpdb as gulpio2

    for name in ("GulpDirectory", "GulpChunk", "ChunkWriter", "GulpIngestor"):
        assert hasattr(gulpio2, name)
    from gulpdb.adapters import AbstractDatasetAdapter
    from gulpdb.fileio import GulpDirectory, calculate_chunk_slices

    assert GulpDirectory is gulpio2.GulpDirectory
    assert AbstractDatasetAdapter is gulpio2.AbstractDatasetAdapter
    assert calculate_chunk_slices is gulpio2.calculate_chunk_slices
