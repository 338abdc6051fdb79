"""The library's dtypes under PyTorch's names, with PyTorch's aliases (hg.float is hg.float32,
hg.double hg.float64, hg.long hg.int64)."""
from ._C import dtype

float32: dtype = dtype.float32
float64: dtype = dtype.float64
int64: dtype = dtype.int64
bool: dtype = dtype.bool  # noqa: A001 (PyTorch's name: torch.bool)
float: dtype = float32  # noqa: A001
double: dtype = float64
long: dtype = int64
