"""ONNX's type enums without importing onnx or onnx_ir (a cold start pays for neither).

``DataType`` and ``AttributeType`` are IntEnums with onnx_ir's member names and
values (the TensorProto / AttributeProto codes), so they compare and hash equal
to onnx_ir's members and to plain codes: a model given as an ``onnx_ir.Model``
mixes freely with values read by ``reader``.  onnx_ir's type classes
(``SequenceType``, ``OptionalType``, ``TensorType`` ...) and anything else are
looked up in onnx_ir on first use (``ir.SequenceType`` imports it then).

Modules use it as ``from smtshape import irtypes as ir``.
"""
from __future__ import annotations

import enum

_BITS = {1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64, 14: 64, 15: 128,
         16: 16, 17: 8, 18: 8, 19: 8, 20: 8, 21: 4, 22: 4, 23: 4, 24: 8, 25: 2, 26: 2, 27: 6, 28: 6}


class DataType(enum.IntEnum):
    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20
    UINT4 = 21
    INT4 = 22
    FLOAT4E2M1 = 23
    FLOAT8E8M0 = 24
    UINT2 = 25
    INT2 = 26
    FLOAT6E2M3 = 27
    FLOAT6E3M2 = 28

    @property
    def bitwidth(self) -> int:
        b = _BITS.get(int(self))
        if b is None:
            raise TypeError(f"Bitwidth not available for ONNX data type: {self.name}")
        return b

    def numpy(self):
        """The numpy dtype (numpy and onnx_ir imported here)."""
        import onnx_ir
        return onnx_ir.DataType(int(self)).numpy()

    def __str__(self):
        return self.name

    def __repr__(self):
        return self.name


class AttributeType(enum.IntEnum):
    UNDEFINED = 0
    FLOAT = 1
    INT = 2
    STRING = 3
    TENSOR = 4
    GRAPH = 5
    FLOATS = 6
    INTS = 7
    STRINGS = 8
    TENSORS = 9
    GRAPHS = 10
    SPARSE_TENSOR = 11
    SPARSE_TENSORS = 12
    TYPE_PROTO = 13
    TYPE_PROTOS = 14


# the integer element types (the analysis tracks their elements as ints; their ranges and
# wrapping are numeric.py's), and with BOOL the types whose small values it keeps
INTEGER_TYPES = frozenset({DataType.INT64, DataType.INT32, DataType.INT16, DataType.INT8,
                           DataType.UINT64, DataType.UINT32, DataType.UINT16, DataType.UINT8})
INT_OR_BOOL_TYPES = INTEGER_TYPES | {DataType.BOOL}


def is_container(t) -> bool:
    """Is a value type a sequence or an optional (onnx_ir's classes), without importing onnx_ir?"""
    return t is not None and type(t).__name__ in ("SequenceType", "OptionalType")


def __getattr__(name):      # SequenceType, OptionalType, TensorType, Model, serde, ...: onnx_ir's
    if name.startswith("__"):
        # the import system probes modules for ``__path__`` (``from .irtypes import x``) and
        # others; answering those from onnx_ir would import it (30 ms) for nothing
        raise AttributeError(name)
    import onnx_ir
    return getattr(onnx_ir, name)
