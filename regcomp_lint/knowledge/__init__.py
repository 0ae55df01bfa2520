"""Facts about torch and Accelerate that rules check against, kept as plain data.

Static lint never imports torch, so these tables are copied from a real installation by
``bench/read_backend_tables.py`` (run it with ``--check`` to see whether they are still right
for another version). Each module names the versions it was read from.
"""

from regcomp_lint.knowledge.backends import ACCELERATE_VERSION, TORCH_VERSION

__all__ = ["ACCELERATE_VERSION", "TORCH_VERSION"]
