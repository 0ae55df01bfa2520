"""``regcomp-fix``'s engine: a libcst codemod that moves training scripts onto Accelerate.

Entry points: :func:`convert_source` (text) and :func:`convert_bytes` (a file's bytes, same
encoding/BOM back). Static: never imports torch/accelerate and never imports or runs the script.
"""

from regcomp_lint.codemod.convert import convert_bytes, convert_source
from regcomp_lint.codemod.options import ConversionResult, ConvertOptions

__all__ = ["convert_source", "convert_bytes", "ConvertOptions", "ConversionResult"]
