"""TEST DOUBLE of TransformerEngine 1.13 for bench/pretrain_gpt/parse_check.py on a machine without
CUDA: Megatron-LM main 5863c5b (the pinned image's) imports transformer_engine and several of its
submodules while its argument parser loads, and only parse_args + validate_args run here. Every
submodule (transformer_engine.pytorch, .pytorch.cpp_extensions, ...) is made on import, and every
name in it is an empty placeholder class; nothing computes. The real TE 1.13 is what the image runs.
"""
import importlib
import importlib.abc
import importlib.machinery
import sys

import torch

__version__ = "1.13.0"


def _attribute(module: str):
    """A module's __getattr__: a lower-case name is a submodule (te.common.recipe), any other an
    empty class (te.pytorch.Linear), made on first use."""
    def attribute(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name[:1].islower():
            return importlib.import_module(f"{module}.{name}")
        return type(name, (torch.nn.Module,), {"__module__": f"{module} (test double)"})
    return attribute


class _Submodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__path__ = []
        module.__getattr__ = _attribute(module.__name__)


sys.meta_path.insert(0, _Submodules())
__getattr__ = _attribute(__name__)
